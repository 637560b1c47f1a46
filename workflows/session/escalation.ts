// Escalation: paging on-call, waiting for the operator's answer, telling on-call it is over.
import { condition, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { EscalationContention, EscalationNotice } from '../../activities/escalationStore';
import type { Denial } from '../../policy/lockContract/lockSchemas';
import type { SessionOutcome } from '../../policy/sessionModel/sessionTypes';
import { untrustedText } from '../../policy/textSafety/untrustedText';
import type { WaitForEdge } from '../../policy/lockContract/waitForGraph';
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes';
import { leaveQueue } from './fastPath';
import type { LockSession } from './lockSession';

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

/** Why a session escalates, and whether it kept its place in the queue meanwhile. */
export interface EscalationCause {
  reason: string;
  /** The model, or the harness's own check, says this is a deadlock. */
  deadlock: boolean;
  /** The cycle of waits, when the harness found it. */
  cycle: WaitForEdge[] | null;
  /** The session is still in the key's queue: a release wakes it, and it tries at once. */
  keepsPlace: boolean;
}

/** An escalation under way: what on-call was told, and until when the session waits for an answer. */
interface PagedEscalation {
  cause: EscalationCause;
  notice: EscalationNotice;
  timeoutMs: number;
  deadline: number;
}

/**
 * What came of waiting on an escalation: `woken`, a session in the queue was woken by a release, or
 * its ticket needs refreshing (the acquisition phase tries the fast path, and waits on if denied);
 * `answered`, the operator granted more budget (the session tries again at once); `ended`, the
 * operator abandoned it or no answer came in time.
 */
type EscalationEvent = { kind: 'woken' } | { kind: 'answered' } | { kind: 'ended'; outcome: SessionOutcome };

/** Pages on-call and shows the session as escalated. */
export async function pageOnCall(session: LockSession, cause: EscalationCause): Promise<PagedEscalation> {
  const { reason, deadlock, cycle } = cause;
  const timeoutMs = session.request.escalationTimeoutMs;
  const notice: EscalationNotice = {
    key: session.key,
    requester: session.requester,
    workflowId: workflowInfo().workflowId,
    reason,
    deadlock,
    ...(cycle ? { cycle } : {}),
    attempts: session.attempts,
    waitedMs: session.waitedMs(),
    ...(session.constraints.escalationContact ? { contact: session.constraints.escalationContact } : {}),
    contention: contentionOf(session),
  };
  session.beginEscalation(reason, deadlock);
  // Shown before on-call is paged, so the count of the key's escalations on every worker (the
  // starvation monitor, a visibility query) can see this one's peers.
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockEscalatedAt, value: new Date(Date.now()) }]);
  const paged = await notifyOnCall.executeWithOptions(
    { summary: `page on-call: ${untrustedText(reason, 120)}` },
    [notice],
  );
  if (paged.flaggedForReview) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockReview, value: true }]);
  session.escalationPaged(paged.flaggedForReview);
  const orRelease = cause.keepsPlace ? ', or for a release' : '';
  session.enter(
    'escalated',
    `waiting for an operator (resolveEscalation) up to ${timeoutMs} ms${orRelease}: ${reason}`,
  );
  return { cause, notice, timeoutMs, deadline: Date.now() + timeoutMs };
}

/**
 * Waits for the operator's answer until the escalation's deadline. A session still in the queue also
 * wakes on a release: then the answer is `woken`. Otherwise the operator's answer (or its absence) is settled here.
 */
export async function awaitOperator(
  session: LockSession,
  escalation: PagedEscalation,
  inQueue: boolean,
  lastDenial: Denial,
): Promise<EscalationEvent> {
  const leftMs = escalation.deadline - Date.now();
  if (!session.operatorAnswered && leftMs > 0) {
    // Its ticket outlives the escalation (ticketSpanMs): no timer refreshes it.
    const summary = `wait for operator, up to ${escalation.timeoutMs} ms` + (inQueue ? ', or a release' : '');
    // A wake-up that came while on-call was paged (or during the last try) ends this wait at once.
    await condition(() => session.operatorAnswered || (inQueue && session.woken), leftMs, { summary });
    if (!session.operatorAnswered && inQueue && Date.now() < escalation.deadline) return { kind: 'woken' };
  }
  return settle(session, escalation, lastDenial);
}

/** The session acquired while escalated: the escalation resolved itself, and on-call is told. */
export async function resolvedByAcquisition(
  session: LockSession,
  escalation: PagedEscalation,
): Promise<void> {
  session.escalationResolved('acquired');
  await notifyEscalationResolved.executeWithOptions(
    { summary: 'tell on-call: resolved, the lock was acquired' },
    [
      {
        ...escalation.notice,
        attempts: session.attempts,
        waitedMs: session.waitedMs(),
        resolution: 'acquired',
      },
    ],
  );
}

// The operator's answer, or none in time: the session ends abandoned, or goes on with more budget.
async function settle(
  session: LockSession,
  escalation: PagedEscalation,
  lastDenial: Denial,
): Promise<EscalationEvent> {
  const { cause, timeoutMs } = escalation;
  const answer = session.takeOperatorAnswer();
  session.escalationResolved(answer ?? 'timed-out');
  if (!answer || answer.action === 'abandon') {
    if (cause.keepsPlace) await leaveQueue(session, answer ? 'abandoned' : 'no operator answer');
    const why = answer
      ? `abandoned by ${answer.operator}: ${answer.reason}`
      : `no operator answer within ${timeoutMs} ms after: ${cause.reason}`;
    session.enter('abandoned', why);
    const outcome: SessionOutcome = {
      status: 'abandoned',
      attempts: session.attempts,
      waitedMs: escalation.notice.waitedMs,
      lastDenial: session.lastDenial ?? lastDenial,
      reason: why,
    };
    return { kind: 'ended', outcome };
  }
  session.grantExtraBudget(answer);
  session.enter(
    'acquiring',
    `operator ${answer.operator} granted ${answer.extraRetries} more retries: ${answer.reason}`,
  );
  return { kind: 'answered' };
}

// The contention as the session last saw it (its last denial, its budget, its last decisions), for
// on-call's page and the escalation record.
function contentionOf(session: LockSession): EscalationContention {
  const denial = session.lastDenial;
  const { budgetLeft, decisions } = session.state;
  return {
    holder: denial?.holder ?? null,
    errorCode: denial?.code ?? 'none',
    place: denial?.position ?? null,
    waiters: denial?.waiters ?? 0,
    budgetLeft: { ...budgetLeft },
    lastDecisions: decisions.slice(-3).map(({ attempt, provider, decision, retryAfterMs }) => ({
      attempt,
      provider,
      decision,
      retryAfterMs,
    })),
  };
}
