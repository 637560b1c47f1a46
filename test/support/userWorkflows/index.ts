// A user's own workflows module, as in docs/operations.md "Using it from your own worker": a job that needs a
// lock, written with withLock, and an activity of the user's that writes with the lease's token.
import { condition, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import { sessionState } from '../../../temporal/messages';
import { withLock } from '../../../workflows/withLock';

/** The user's own activity. */
export interface ExportActivities {
  exportBatch(input: { key: string; token: string; batch: string }): Promise<string>;
}

const { exportBatch } = proxyActivities<ExportActivities>({ startToCloseTimeout: '10 seconds' });

/** Exports one batch under the key's lock; the sessions run on `lockwardenTaskQueue` when given. */
export async function nightlyExport(input: {
  key: string;
  batch: string;
  lockwardenTaskQueue?: string;
}): Promise<{ token: string; receipt: string }> {
  return withLock(
    { key: input.key, requester: workflowInfo().workflowId },
    async (lease) => ({
      token: lease.token,
      receipt: await exportBatch({ key: input.key, token: lease.token, batch: input.batch }),
    }),
    { taskQueue: input.lockwardenTaskQueue },
  );
}

/** CPU-bound work done in a single activation, as a user's workflow might (the pause test's target). */
export async function busyActivation(iterations: number): Promise<number> {
  let x = 0;
  for (let i = 0; i < iterations; i++) x = (Math.imul(x, 31) + i) | 0;
  return x;
}

/**
 * Holds `first` through withLock and, while holding it, asks for `second` (a transfer between two
 * accounts, say): two of these with the keys swapped are a lock inversion.
 */
export async function transferBetween(input: {
  first: string;
  second: string;
  /** How long to hold `first` before asking for `second`, so that both jobs hold one key first. */
  pauseMs: number;
}): Promise<{ first: string; second: string }> {
  const requester = workflowInfo().workflowId;
  const budget = { baseBackoffMs: 50, maxBackoffMs: 200 };
  return withLock({ key: input.first, requester, budget }, async (outer) => {
    await sleep(input.pauseMs);
    return withLock({ key: input.second, requester, budget }, async (inner) => ({
      first: outer.token,
      second: inner.token,
    }));
  });
}

/**
 * Not a session: a workflow any client of the namespace could start under a session's id, answering
 * the `state` query as a holding session would (the sweep must not take its word).
 */
export async function impostorSession(token: string): Promise<void> {
  setHandler(sessionState, () => ({ phase: 'holding', lease: { token } }) as never);
  await condition(() => false, '1 hour');
}
