// Runs one campaign session to a definite outcome, riding out Temporal's own faults.
import { setTimeout as delay } from 'node:timers/promises';
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES } from '../policy/errors';
import type { CampaignWriteResult, campaignWrite } from './campaignWorkflows';
import type { SessionOutcome } from './checker';

/**
 * Runs one campaign session (a `campaignWrite` workflow) to a definite outcome, riding out Temporal's
 * restarts. A session that cannot be started or followed until `deadline` is `lost` (a violation the
 * checker counts), never an error that would end the campaign.
 */
export async function runSession(
  client: Client,
  workflowId: string,
  input: Parameters<typeof campaignWrite>[0],
  { taskQueue, deadline }: { taskQueue: string; deadline: number },
): Promise<SessionOutcome> {
  try {
    await untilAnswered(deadline, async () => {
      try {
        await client.workflow.start<typeof campaignWrite>('campaignWrite', {
          taskQueue,
          workflowId,
          args: [input],
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        });
      } catch (error) {
        // An earlier try reached the server before its answer was lost: the session is started.
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    });
    return await untilAnswered(deadline, async () => {
      try {
        const result: CampaignWriteResult = await client.workflow.getHandle(workflowId).result();
        if (result.accepted) return 'wrote';
        return 'unproven' in result ? 'stopped-unproven' : 'write-refused';
      } catch (error) {
        if (!(error instanceof WorkflowFailedError)) throw error;
        const cause = error.cause instanceof ApplicationFailure ? error.cause.type : null;
        if (cause === FAILURE_TYPES.leaseLost) return 'lease-lost';
        if (cause === FAILURE_TYPES.lockNotAcquired) return 'not-acquired';
        return 'failed-otherwise';
      }
    });
  } catch {
    return 'lost';
  }
}

// Retries a call that fails because Temporal is down (or restarting) until it answers or `deadline`.
async function untilAnswered<T>(deadline: number, call: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await delay(500);
    }
  }
}

/**
 * Runs per lock-session workflow id, from Temporal's visibility; a continued run is one session.
 * `where` narrows the query (a test's own sessions).
 */
export async function runsPerSessionId(client: Client, where?: string): Promise<Record<string, number>> {
  const runs: Record<string, number> = {};
  const query = `WorkflowType = 'acquireLock' AND ExecutionStatus != 'ContinuedAsNew'${where ? ` AND ${where}` : ''}`;
  for await (const execution of client.workflow.list({ query }))
    runs[execution.workflowId] = (runs[execution.workflowId] ?? 0) + 1;
  return runs;
}

/** Every session the driver launched, with `lost` for those that reached no outcome in time. */
export function outcomesOfAll(launched: string[], outcomes: Record<string, SessionOutcome>) {
  return Object.fromEntries(launched.map((id) => [id, outcomes[id] ?? ('lost' as const)]));
}
