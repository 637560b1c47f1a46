// The guardrails: what a decision becomes under the hard budget and the operator's constraints.
import type { BudgetLimit, RetryBudget } from './acquireRequest';
import type { RetryDecision } from './retryDecision';
import { jitterModelDelay } from './backoff';
import { LATENCY_FLOOR_MS } from '../constants';

/** How far a session has got: tries made so far and time spent waiting, in workflow time. */
export interface RetryProgress {
  attempts: number;
  elapsedMs: number;
}

/** What the guardrails allow next: a sleep of a bounded length, or a stop because the budget is spent. */
export type NextStep =
  | { kind: 'sleep'; sleepMs: number; requestedMs: number; clamped: boolean }
  | { kind: 'stop'; why: BudgetLimit };

/**
 * Bounds a requested retry delay by rules nothing upstream can override: never below the 50 ms
 * floor, never above the configured maximum backoff or what is left of the budget, and no further
 * retry once `maxRetries` or `maxTotalWaitMs` is spent.
 */
export function boundRetryDelay(requestedMs: number, progress: RetryProgress, budget: RetryBudget): NextStep {
  const spent = budgetSpent(progress, budget);
  if (spent) return { kind: 'stop', why: spent };
  const remainingMs = budget.maxTotalWaitMs - progress.elapsedMs;
  const ceiling = Math.min(budget.maxBackoffMs, remainingMs);
  const finite = Number.isFinite(requestedMs) ? Math.round(requestedMs) : ceiling;
  const sleepMs = Math.min(ceiling, Math.max(LATENCY_FLOOR_MS, finite));
  return { kind: 'sleep', sleepMs, requestedMs, clamped: sleepMs !== requestedMs };
}

/** Which limit of the budget is spent, or null while another retry fits in it. */
function budgetSpent(progress: RetryProgress, budget: RetryBudget): BudgetLimit | null {
  if (progress.attempts - 1 >= budget.maxRetries) return 'max-retries';
  if (budget.maxTotalWaitMs - progress.elapsedMs < LATENCY_FLOOR_MS) return 'max-total-wait';
  return null;
}

/**
 * The retry harness's hard rules on top of the budget (sessions from before them pass none): a spent
 * budget escalates whatever was decided, abandon included; no escalation a decision asks for comes
 * before `noEscalationBeforeMs` of waiting (a constraint); and a model's delay is jittered client-side.
 */
interface HarnessRules {
  noEscalationBeforeMs: number | null;
  /** A sample in [0, 1) for the jitter on a model's delay; null for a delay the policy chose. */
  jitterSample: number | null;
}

/** What the workflow does after the guardrails have looked at a decision. */
export type GuardedStep =
  | {
      kind: 'sleep';
      sleepMs: number;
      requestedMs: number;
      clamped: boolean;
      /** A park that the decision's delay ends before the wake-up expected (see parkUntilTold). */
      parkEndsAtDelay?: boolean;
    }
  | { kind: 'escalate'; reason: string; deadlock: boolean }
  | { kind: 'abandon'; reason: string }
  /** The decision flagged a deadlock: the session checks the service's wait-for graph at once. */
  | { kind: 'check-deadlock'; suspicion: string };

/**
 * The rules no decision maker can override, applied once, in the workflow, after any provider: a
 * decision's deadlock flag is never a silent back-off (the session checks the lock service's
 * wait-for graph at once, and a human decides when the graph does not confirm it); a spent budget
 * escalates whatever else was decided; a retry without a delay never reaches a sleep; and every
 * sleep is bounded by `boundRetryDelay`.
 */
export function guardDecision(
  decision: RetryDecision,
  progress: RetryProgress,
  budget: RetryBudget,
  rules?: HarnessRules,
): GuardedStep {
  if (rules && decision.deadlock_detected)
    return { kind: 'check-deadlock', suspicion: decision.escalation_reason ?? decision.explanation };
  const spent = rules ? budgetSpent(progress, budget) : null;
  if (spent) return { kind: 'escalate', reason: `budget spent (${spent})`, deadlock: false };
  if (decision.decision === 'abandon') return { kind: 'abandon', reason: decision.explanation };
  if (decision.decision === 'escalate') {
    const tooEarly = rules?.noEscalationBeforeMs ?? 0;
    if (progress.elapsedMs < tooEarly) {
      // Held back by a constraint: wait out the rest of the time, then decide again.
      const held = boundRetryDelay(tooEarly - progress.elapsedMs, progress, budget);
      if (held.kind === 'sleep') return held;
    }
    return { kind: 'escalate', reason: decision.escalation_reason ?? decision.explanation, deadlock: false };
  }
  const requested = decision.retry_after_ms;
  if (typeof requested !== 'number') {
    return { kind: 'escalate', reason: 'a retry decision came without a delay', deadlock: false };
  }
  const sample = rules?.jitterSample ?? null;
  const jittered = sample === null ? requested : jitterModelDelay(requested, sample);
  const bounded = boundRetryDelay(jittered, progress, budget);
  if (bounded.kind === 'stop')
    return { kind: 'escalate', reason: `budget spent (${bounded.why})`, deadlock: false };
  return { ...bounded, requestedMs: requested, clamped: bounded.sleepMs !== jittered };
}

/**
 * What became of a decision: a back-off of its own, a park its delay gave way to, a park its delay
 * ended (a model's delay shorter than the wake-up expected), an escalation, the end, a deadlock check.
 */
export type AppliedAs = 'backoff' | 'park' | 'park-for-delay' | 'escalate' | 'abandon' | 'deadlock-check';

/** How a guarded step was applied; `parked`: the waiter parks in its place instead of backing off. */
export function appliedAs(step: GuardedStep, parked: boolean): AppliedAs {
  if (step.kind === 'sleep') return !parked ? 'backoff' : step.parkEndsAtDelay ? 'park-for-delay' : 'park';
  if (step.kind === 'check-deadlock') return 'deadlock-check';
  return step.kind;
}
