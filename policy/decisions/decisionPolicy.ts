// The deterministic retry policy: what answers when no model does, and how its back-off grows.
import { decorrelatedJitter } from './backoff';
import { LATENCY_FLOOR_MS } from '../constants';
import type { DecisionContext, DecisionProvider, FallbackCause, RetryDecision } from './retryDecision';
import { cycleThrough } from '../lockContract/waitForGraph';

/** Reviewed knobs of the deterministic policy (from the session's budget, never from a model). */
export interface PolicyTuning {
  baseBackoffMs: number;
  maxBackoffMs: number;
  previousBackoffMs: number;
  /** How long the lock service keeps a waiter's place; a FIFO waiter must come back well within it. */
  queueTicketMs: number;
}

/** Past this share of the wait budget, escalate unless the lock is about to be released (rule 3). */
const BUDGET_ESCALATION_SHARE = 0.8;
/**
 * Failures in a row with an unchanged reason that call for a human (rule 4): at least 6, and half the
 * session's retry budget, so a session given a long budget for a long hold is not cut short by it.
 */
function repeatedFailureThreshold(maxRetries: number): number {
  return Math.max(6, Math.ceil(maxRetries / 2));
}

/**
 * The deterministic retry policy: the default when no model is configured, and the fallback when a
 * model's answer cannot be used. It applies the seven rules of the retry-decision prompt in a fixed
 * order; `random` is the workflow's replay-safe generator, so the same history gives the same answer.
 */
export function decideByPolicy(
  ctx: DecisionContext,
  tuning: PolicyTuning,
  random: () => number,
): RetryDecision {
  const budgetMs = ctx.maxWaitBudgetSeconds * 1000;
  const elapsedMs = ctx.elapsedWaitSeconds * 1000;
  const remainingMs = budgetMs - elapsedMs;
  const releaseImminent =
    ctx.currentHolder === null ||
    (ctx.holderLeaseRemainingMs !== null && ctx.holderLeaseRemainingMs <= tuning.baseBackoffMs * 2);
  const starvation = starvationRisk(ctx);

  // Rule 5: a cycle of waits through this requester is a deadlock; no retry can break it.
  const cycle = cycleThrough(ctx.owner ?? ctx.requester, ctx.waitForEdges);
  if (cycle) {
    const path = cycle.map((e) => `${e.waiter} waits for ${e.key} held by ${e.holder}`).join('; ');
    return escalate(
      `deadlock: ${path}`,
      starvation,
      true,
      'A cycle of waits includes this requester, so waiting cannot end it.',
    );
  }
  // Rule 7: never retry without budget left for at least one floor-length wait.
  if (remainingMs < LATENCY_FLOOR_MS) {
    return escalate(
      'wait budget spent',
      starvation,
      false,
      'The wait budget is spent, so a human must decide what happens next.',
    );
  }
  // Rule 3: late in the budget, hand over to a human unless the holder is about to let go.
  if (elapsedMs > BUDGET_ESCALATION_SHARE * budgetMs && !releaseImminent) {
    return escalate(
      `more than ${BUDGET_ESCALATION_SHARE * 100}% of the wait budget used and no release in sight`,
      starvation,
      false,
      'Most of the wait budget is gone and the holder shows no sign of releasing soon.',
    );
  }
  // Rule 4: the same failure over and over is not contention that waiting will fix.
  const sameReason =
    ctx.recentDecisions.length > 0 && ctx.recentDecisions.every((d) => d.failureReason === ctx.failureReason);
  if (ctx.consecutiveFailures >= repeatedFailureThreshold(ctx.maxRetries) && sameReason) {
    return escalate(
      `${ctx.consecutiveFailures} consecutive failures, always "${ctx.failureReason}"`,
      starvation,
      false,
      'The same failure keeps repeating, which points at something a retry will not fix.',
    );
  }
  // Rule 1: a lease that has run out (or is about to) will free the lock: come back just after it.
  if (ctx.holderLeaseRemainingMs !== null && ctx.holderLeaseRemainingMs < tuning.baseBackoffMs) {
    return retry(
      Math.max(LATENCY_FLOOR_MS, ctx.holderLeaseRemainingMs + LATENCY_FLOOR_MS),
      'linear',
      starvation,
      "The holder's lease is expiring, so a short wait should find the lock free.",
    );
  }
  // Rule 2, parked: a release wakes this requester in its place, so the delay is only the fallback
  // for a holder that dies: come back when its lease runs out, well inside the ticket's life.
  if (ctx.wokenByRelease) {
    const leaseEndMs = (ctx.holderLeaseRemainingMs ?? 0) + LATENCY_FLOOR_MS;
    return retry(
      withinTicket(leaseEndMs, tuning),
      'linear',
      starvation,
      'A release wakes this requester in its place, so it waits for the release rather than polling.',
    );
  }
  // Rule 2: under FIFO with others waiting, keep our place: modest, linear steps well inside the ticket's life.
  if (ctx.fairnessPolicy === 'FIFO' && ctx.otherWaitersExist) {
    const step = tuning.baseBackoffMs * Math.min(ctx.attempt, 4);
    return retry(
      withinTicket(step, tuning),
      'linear',
      starvation,
      'Others are queued under FIFO, so a modest wait keeps this requester in line.',
    );
  }
  // Default: decorrelated jitter spreads contenders apart; rule 6 keeps it above the floor.
  const delay = decorrelatedJitter(
    { previousMs: tuning.previousBackoffMs, baseMs: tuning.baseBackoffMs, capMs: tuning.maxBackoffMs },
    random,
  );
  return retry(
    Math.max(LATENCY_FLOOR_MS, delay),
    'decorrelated-jitter',
    starvation,
    'The lock is contended, so a jittered wait avoids a thundering herd.',
  );
}

// A delay capped by the back-off limit and a third of the queue ticket's life, never under the floor.
function withinTicket(ms: number, tuning: PolicyTuning): number {
  return Math.max(LATENCY_FLOOR_MS, Math.min(ms, tuning.maxBackoffMs, Math.floor(tuning.queueTicketMs / 3)));
}

function starvationRisk(ctx: DecisionContext): RetryDecision['starvation_risk'] {
  if (
    ctx.consecutiveFailures >= repeatedFailureThreshold(ctx.maxRetries) ||
    ctx.elapsedWaitSeconds > ctx.maxWaitBudgetSeconds / 2
  )
    return 'high';
  return ctx.otherWaitersExist ? 'medium' : 'low';
}

function retry(
  ms: number,
  strategy: RetryDecision['backoff_strategy'],
  risk: RetryDecision['starvation_risk'],
  explanation: string,
): RetryDecision {
  return {
    decision: 'retry',
    retry_after_ms: Math.round(ms),
    backoff_strategy: strategy,
    lease_renewal_instruction: null,
    starvation_risk: risk,
    deadlock_detected: false,
    escalation_reason: null,
    explanation,
  };
}

function escalate(
  reason: string,
  risk: RetryDecision['starvation_risk'],
  deadlock: boolean,
  explanation: string,
): RetryDecision {
  return {
    decision: 'escalate',
    retry_after_ms: null,
    backoff_strategy: null,
    lease_renewal_instruction: null,
    starvation_risk: risk,
    deadlock_detected: deadlock,
    escalation_reason: reason,
    explanation,
  };
}

/** A decision with its provenance, as the decision activity returns it and the workflow records it. */
export interface DecisionRecord {
  decision: RetryDecision;
  provider: DecisionProvider;
  model: string | null;
  repaired: boolean;
  fallbackCause: FallbackCause | null;
  /** The validation or API error behind a fallback, for the log; never model text. */
  fallbackDetail: string | null;
  /** Made by a worker in the lab-only single-process mode (LOCKWARDEN_LAB_SINGLE_PROCESS). */
  labSingleProcess?: true;
}

/** What the deterministic policy needs to answer: the context, its tuning and one seeded sample. */
export interface PolicyInput {
  context: DecisionContext;
  tuning: PolicyTuning;
  /** A number in [0, 1) drawn by the workflow's deterministic random, for the policy's jitter. */
  jitterSample: number;
}

/**
 * The policy's answer as a decision record: the one way a policy decision is made, whether the
 * decision activity answers without a model or the workflow answers after the activity failed for good.
 */
export function policyRecord(
  { context, tuning, jitterSample }: PolicyInput,
  fallbackCause: FallbackCause,
  fallbackDetail: string | null = null,
  model: string | null = null,
): DecisionRecord {
  return {
    decision: decideByPolicy(context, tuning, () => jitterSample),
    provider: 'policy',
    model,
    repaired: false,
    fallbackCause,
    fallbackDetail,
  };
}
