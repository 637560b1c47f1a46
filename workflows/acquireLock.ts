// The acquireLock workflow: one lock acquisition session, from the request's check to its end.
import {
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  isCancellation,
  workflowInfo,
} from '@temporalio/workflow';
import { FAILURE_TYPES } from '../policy/errors';
import type { SessionAttempt } from '../activities/lockActivities';
import type { AcquireRequestInput } from '../policy/decisions/acquireRequest';
import type { SessionOutcome } from '../policy/sessionModel/sessionTypes';
import { acquireUntilHeld, type Acquisition } from './session/acquirePhase';
import { checkRequestAndTryFirst, leaveQueue } from './session/fastPath';
import { holdingAgain } from './session/holdHandover';
import { holdUntilReleased } from './session/holdPhase';
import { LockSession, type PhaseEnd } from './session/lockSession';
import { sessionLog, sessionMetrics } from './session/metricsSink';
import { installSessionHandlers, SessionSlot } from './session/sessionHandlers';

/**
 * One acquisition session, as callers meet it: it acquires the lease (fast path, retry decisions
 * under guardrails, durable back-offs that a release cuts short, escalation to on-call), then holds
 * it (a keeper renews it, fenced) until the caller releases it. The phases live in ./session; this
 * function alone ends a run, by returning the outcome or by continuing as new while it waits.
 */
export async function acquireLock(input: AcquireRequestInput): Promise<SessionOutcome> {
  refuseCarriedStateFromOutside(input);
  const slot = new SessionSlot();
  installSessionHandlers(slot);
  const checked = await checkRequestAndTryFirst(input);
  // Where decisions are made is this worker's to say, not the request's: kept apart from it, so a
  // continued run checks its request afresh.
  const { modelTaskQueue, decisionsByPolicy, ...request } = checked.request;
  const session = new LockSession(request, {
    modelTaskQueue: modelTaskQueue ?? null,
    byPolicy: decisionsByPolicy === true,
  });
  slot.open(session);
  const holding = request.resume?.holding;
  const acquired = holding
    ? await holdingAgain(session, holding)
    : await acquireOrLeave(session, checked.firstAttempt);
  if (acquired.kind !== 'continued' && !holding) {
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
    acquired.kind === 'held' ? await holdUntilReleased(session, acquired.lease, holding) : acquired;
  if (end.kind === 'ended') return session.finish(end.outcome);
  const resume = await session.handOverToNextRun(end.resume);
  return continueAsNew<typeof acquireLock>({
    ...session.request,
    // The next run has no memo of its own: the release key's digest goes with the request.
    ...(session.releaseKeyDigest ? { releaseKeyDigest: session.releaseKeyDigest } : {}),
    budget: session.budget,
    resume,
  });
}

/**
 * `resume` is what a session's run hands its next run when it continues as new: a run that no run of
 * its own continued (any client can start a workflow with any input) is refused before it does
 * anything, with the request's typed failure.
 */
function refuseCarriedStateFromOutside(input: unknown): void {
  const carries = typeof input === 'object' && input !== null && 'resume' in input;
  if (carries && workflowInfo().continuedFromExecutionRunId === undefined)
    throw ApplicationFailure.nonRetryable(
      'invalid acquisition request: resume: is carried only from a session to its own next run (continue-as-new); a caller never sets it',
      FAILURE_TYPES.invalidLockRequest,
    );
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
