// What a retry decision is told: the context built from a denial and the session's past.
import type { AcquireRequest } from './acquireRequest';
import type { Denial } from '../lockContract/lockSchemas';
import type { DecisionContext } from './retryDecision';
import type { WaitForEdge } from '../lockContract/waitForGraph';

/** A past decision of this session, as the next decision sees it. */
export type PastDecision = DecisionContext['recentDecisions'][number];

/** What the session knows after a denial, turned into the decision context. Pure. */
export function buildDecisionContext(input: {
  request: AcquireRequest;
  denial: Denial;
  attempts: number;
  /** Denials in a row in which nothing moved (same holder, no renewal, no progress in the queue). */
  unchangedDenials: number;
  elapsedMs: number;
  recentDecisions: readonly PastDecision[];
  waitForEdges: WaitForEdge[];
  /** Whether the waiter parks in its place until a release wakes it (see canPark). */
  parks: boolean;
}): DecisionContext {
  const { request, denial } = input;
  const node = request.owner ?? request.requester;
  return {
    lockName: request.key,
    requester: request.requester,
    ...(request.owner ? { owner: request.owner } : {}),
    currentHolder: denial.holder,
    lockTtlSeconds: request.ttlMs / 1000,
    elapsedWaitSeconds: input.elapsedMs / 1000,
    maxWaitBudgetSeconds: request.budget.maxTotalWaitMs / 1000,
    fairnessPolicy: request.fairness,
    failureReason: denial.reason,
    errorCode: denial.code,
    serviceResponse: serviceResponseOf(denial),
    maxBackoffMs: request.budget.maxBackoffMs,
    consecutiveFailures: input.unchangedDenials,
    otherWaitersExist: denial.waiters > 0,
    constraints: request.constraints,
    attempt: input.attempts,
    maxRetries: request.budget.maxRetries,
    // Both times are the service's, so the difference is free of the worker's clock.
    holderLeaseRemainingMs:
      denial.holderLeaseUntil === null ? null : denial.holderLeaseUntil - denial.serviceTime,
    queuePosition: denial.position,
    wokenByRelease: input.parks,
    recentDecisions: input.recentDecisions.slice(-5),
    // The edges that touch this session's owner, as the decision context's schema has them.
    waitForEdges: input.waitForEdges
      .filter((e) => e.waiter === node || e.holder === node)
      .map(({ waiter, key, holder }) => ({ waiter, key, holder })),
  };
}

/**
 * The denial as the lock service answered it, less its times on the service's clock: a deadline or a
 * clock reading is the kind of value the model boundary keeps out (what is left of the holder's time
 * is given as a duration instead).
 */
function serviceResponseOf(denial: Denial): string {
  const { holderLeaseUntil: _deadline, serviceTime: _clock, ...answered } = denial;
  return JSON.stringify(answered).slice(0, 1_000);
}
