import { condition, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { Denial } from '../../policy/lockSchemas';
import { untrustedText } from '../../policy/untrustedText';
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes';
import { lockCalls } from '../lockCalls';
import type { LockSession, PhaseEnd } from './lockSession';

// Paging a human must not be lost: retried for a long while.
const { notifyOnCall } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 20,
  },
});

/** Gives up the session's place in the key's queue, so a session that stops waiting blocks no one. */
export async function leaveQueue(session: LockSession, why: string): Promise<void> {
  await lockCalls.leaveQueue.executeWithOptions({ summary: `leave the queue: ${why}` }, [
    { key: session.key, requester: session.requester },
  ]);
}

/**
 * Pages on-call and waits for the operator's answer, up to the escalation timeout. Ends the session
 * (abandoned by the operator, or no answer in time), or returns undefined when the operator granted
 * more budget on top of what was spent and the session should try again at once.
 */
export async function escalateAndWait(
  session: LockSession,
  reason: string,
  deadlock: boolean,
  lastDenial: Denial,
): Promise<PhaseEnd | undefined> {
  const attempts = session.state.attempts;
  const waitedMs = session.waitedMs();
  const timeoutMs = session.request.escalationTimeoutMs;
  const escalation = { reason, deadlock, flaggedForReview: false, resolution: null };
  session.state.escalation = escalation;
  const notice = await notifyOnCall.executeWithOptions(
    { summary: `page on-call: ${untrustedText(reason, 120)}` },
    [
      {
        key: session.key,
        requester: session.requester,
        workflowId: workflowInfo().workflowId,
        reason,
        deadlock,
        attempts,
        waitedMs,
      },
    ],
  );
  if (notice.flaggedForReview) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockReview, value: true }]);
  session.state.escalation = { ...escalation, flaggedForReview: notice.flaggedForReview };
  session.enter('escalated', `waiting for an operator (resolveEscalation) up to ${timeoutMs} ms: ${reason}`);
  await condition(() => session.operatorAnswer !== undefined, timeoutMs, {
    summary: `wait for operator, up to ${timeoutMs} ms`,
  });
  const answer = session.takeOperatorAnswer();
  session.state.escalation = { ...session.state.escalation, resolution: answer ?? 'timed-out' };
  if (!answer || answer.action === 'abandon') {
    const why = answer
      ? `abandoned by ${answer.operator}: ${answer.reason}`
      : `no operator answer within ${timeoutMs} ms after: ${reason}`;
    session.enter('abandoned', why);
    return { outcome: { status: 'abandoned', attempts, waitedMs, lastDenial, reason: why } };
  }
  session.budget = {
    ...session.budget,
    maxRetries: attempts - 1 + answer.extraRetries,
    maxTotalWaitMs: waitedMs + answer.extraWaitMs,
  };
  session.enter(
    'acquiring',
    `operator ${answer.operator} granted ${answer.extraRetries} more retries: ${answer.reason}`,
  );
  return undefined;
}
