import { condition, log, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { Denial, Lease } from '../../policy/lockSchemas';
import { untrustedText } from '../../policy/untrustedText';
import { ticketRefreshMs } from '../../policy/waiting';
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes';
import { lockCalls, lockServiceUnreachable } from '../lockCalls';
import { QUEUE_TICKET_MS } from './decideStep';
import { tryFastPath } from './fastPath';
import type { LockSession, PhaseEnd } from './lockSession';

// Paging a human (and telling them it is over) must not be lost: retried for a long while.
const { notifyOnCall, notifyEscalationResolved } = proxyActivities<Activities>({
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
  try {
    await lockCalls.leaveQueue.executeWithOptions({ summary: `leave the queue: ${why}` }, [
      { key: session.key, requester: session.requester },
    ]);
  } catch (error) {
    if (!lockServiceUnreachable(error)) throw error;
    // Unreachable now: the place lapses on its own when its ticket does, and blocks no one for long.
    log.warn('could not leave the queue: the lock service was unreachable', { key: session.key });
  }
}

/** Why a session escalates, and whether it kept its place in the queue meanwhile. */
export interface EscalationCause {
  reason: string;
  deadlock: boolean;
  /** The session is still in the key's queue: a release wakes it, and it tries at once. */
  keepsPlace: boolean;
}

/**
 * Pages on-call and waits for the operator's answer, up to the escalation timeout. A session that
 * kept its place tries again when a release wakes it (or when its ticket must be refreshed): if it
 * acquires, the escalation resolves itself and on-call is told. Returns the lease so acquired; the
 * session's end (abandoned by the operator, or no answer in time); or undefined when the operator
 * granted more budget on top of what was spent and the session should try again at once.
 */
export async function escalateAndWait(
  session: LockSession,
  cause: EscalationCause,
  lastDenial: Denial,
): Promise<{ lease: Lease } | PhaseEnd | undefined> {
  const { reason, deadlock } = cause;
  const attempts = session.state.attempts;
  const waitedMs = session.waitedMs();
  const timeoutMs = session.request.escalationTimeoutMs;
  const notice = {
    key: session.key,
    requester: session.requester,
    workflowId: workflowInfo().workflowId,
    reason,
    deadlock,
    attempts,
    waitedMs,
  };
  const escalation = { reason, deadlock, flaggedForReview: false, resolution: null };
  session.state.escalation = escalation;
  const paged = await notifyOnCall.executeWithOptions(
    { summary: `page on-call: ${untrustedText(reason, 120)}` },
    [notice],
  );
  if (paged.flaggedForReview) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockReview, value: true }]);
  session.state.escalation = { ...escalation, flaggedForReview: paged.flaggedForReview };
  const orRelease = cause.keepsPlace ? ', or for a release' : '';
  session.enter(
    'escalated',
    `waiting for an operator (resolveEscalation) up to ${timeoutMs} ms${orRelease}: ${reason}`,
  );

  const lease = await waitForOperator(session, timeoutMs, cause.keepsPlace);
  if (lease) {
    session.state.escalation = { ...session.state.escalation, resolution: 'acquired' };
    await notifyEscalationResolved.executeWithOptions(
      { summary: 'tell on-call: resolved, the lock was acquired' },
      [{ ...notice, attempts: session.state.attempts, waitedMs: session.waitedMs(), resolution: 'acquired' }],
    );
    return { lease };
  }
  const answer = session.takeOperatorAnswer();
  session.state.escalation = { ...session.state.escalation, resolution: answer ?? 'timed-out' };
  if (!answer || answer.action === 'abandon') {
    if (cause.keepsPlace) await leaveQueue(session, answer ? 'abandoned' : 'no operator answer');
    const why = answer
      ? `abandoned by ${answer.operator}: ${answer.reason}`
      : `no operator answer within ${timeoutMs} ms after: ${reason}`;
    session.enter('abandoned', why);
    const last = session.lastDenial ?? lastDenial;
    return {
      outcome: {
        status: 'abandoned',
        attempts: session.state.attempts,
        waitedMs,
        lastDenial: last,
        reason: why,
      },
    };
  }
  session.budget = {
    ...session.budget,
    maxRetries: session.state.attempts - 1 + answer.extraRetries,
    maxTotalWaitMs: session.waitedMs() + answer.extraWaitMs,
  };
  session.enter(
    'acquiring',
    `operator ${answer.operator} granted ${answer.extraRetries} more retries: ${answer.reason}`,
  );
  return undefined;
}

/**
 * Waits for the operator's answer up to `timeoutMs`. A session that keeps its place also wakes on a
 * release, and when its ticket must be refreshed, and tries the fast path: the lease if it got one,
 * else null (the operator answered, or the time ran out).
 */
async function waitForOperator(
  session: LockSession,
  timeoutMs: number,
  keepsPlace: boolean,
): Promise<Lease | null> {
  const answered = () => session.operatorAnswer !== undefined;
  const deadline = Date.now() + timeoutMs;
  let inQueue = keepsPlace;
  for (;;) {
    const leftMs = deadline - Date.now();
    if (answered() || leftMs <= 0) return null;
    const waitMs = inQueue ? Math.min(leftMs, ticketRefreshMs(QUEUE_TICKET_MS)) : leftMs;
    const summary = `wait for operator, up to ${timeoutMs} ms` + (inQueue ? ', or a release' : '');
    // A wake-up that came while on-call was paged (or during the last try) ends this wait at once.
    await condition(() => answered() || (inQueue && session.woken), waitMs, { summary });
    if (answered() || !inQueue || Date.now() >= deadline) continue;
    session.woken = false;
    const attempt = await tryFastPath(session, 'escalated, tries on a release');
    if (attempt.granted) return attempt.lease;
    session.lastDenial = attempt.denial;
    session.state.holder = attempt.denial.holder;
    inQueue = attempt.denial.position !== null;
  }
}
