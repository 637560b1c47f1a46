import { CancellationScope, continueAsNew, isCancellation } from '@temporalio/workflow';
import type { SessionAttempt } from '../activities/lockActivities';
import type { AcquireRequestInput } from '../policy/acquireRequest';
import type { SessionOutcome } from '../policy/session';
import { acquireUntilHeld, type Acquisition } from './session/acquirePhase';
import { checkedRequest } from './session/checkedRequest';
import { sessionPaths } from './session/sessionPaths';
import { leaveQueue } from './session/fastPath';
import { holdUntilReleased } from './session/holdPhase';
import { LockSession, type PhaseEnd } from './session/lockSession';
import { sessionLog, sessionMetrics } from './session/metricsSink';
import { installSessionHandlers, SessionSlot } from './session/sessionHandlers';

/**
 * One acquisition session, as callers meet it: it acquires the lease (fast path, retry decisions
 * under guardrails, durable back-offs that a release cuts short, escalation to on-call), then holds
 * it (fenced renewals) until the caller releases it. The phases live in ./session; this function
 * alone ends a run, by returning the outcome or by continuing as new.
 */
export async function acquireLock(input: AcquireRequestInput): Promise<SessionOutcome> {
  const paths = sessionPaths();
  const slot = new SessionSlot();
  installSessionHandlers(slot);
  const checked = await checkedRequest(input, paths);
  // Where decisions are made is this worker's to say, not the request's: kept apart from it, so a
  // continued run checks its request afresh.
  const { modelTaskQueue, decisionsByPolicy, ...request } = checked.request;
  const session = new LockSession(request, paths, {
    modelTaskQueue: modelTaskQueue ?? null,
    byPolicy: decisionsByPolicy === true,
  });
  // The first attempt is counted before the signals kept meanwhile reach the session: a release's
  // wake-up that came while it ran then counts for the next try instead of being lost.
  if (checked.firstAttempt) session.beginAttempt();
  slot.open(session);
  const resumed = session.resumedLease;
  const acquired: Acquisition = resumed
    ? { kind: 'held', lease: resumed }
    : await acquireOrLeave(session, checked.firstAttempt);
  if (!resumed && acquired.kind !== 'continued') {
    const outcome = acquired.kind === 'held' ? 'acquired' : acquired.outcome.status;
    sessionMetrics.acquisitionEnded(outcome, session.waitedMs());
    sessionLog.acquisitionEnded({
      key: session.key,
      requester: session.requester,
      outcome,
      attempts: session.attempts,
      escalations: session.escalations,
      waitedMs: session.waitedMs(),
    });
  }
  const end: PhaseEnd =
    acquired.kind === 'held' ? await holdUntilReleased(session, acquired.lease) : acquired;
  if (end.kind === 'ended') return session.finish(end.outcome);
  await session.handOverToNextRun();
  return continueAsNew<typeof acquireLock>({
    ...session.request,
    budget: session.budget,
    resume: end.resume,
  });
}

// A session cancelled while it waits gives its place up on the way out: a ticket outlives a waiter
// only when no code of it can run (terminated, timed out), and the hand-off skips those.
async function acquireOrLeave(session: LockSession, first: SessionAttempt | null): Promise<Acquisition> {
  try {
    return await acquireUntilHeld(session, first);
  } catch (error) {
    if (isCancellation(error)) await CancellationScope.nonCancellable(() => leaveQueue(session, 'cancelled'));
    throw error;
  }
}
