import type { BudgetLimit, RetryBudget } from './acquireRequest';
import type { RetryDecision } from './retryDecision';
import { LATENCY_FLOOR_MS } from './constants';

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
  const retriesUsed = progress.attempts - 1;
  if (retriesUsed >= budget.maxRetries) return { kind: 'stop', why: 'max-retries' };
  const remainingMs = budget.maxTotalWaitMs - progress.elapsedMs;
  if (remainingMs < LATENCY_FLOOR_MS) return { kind: 'stop', why: 'max-total-wait' };
  const ceiling = Math.min(budget.maxBackoffMs, remainingMs);
  const finite = Number.isFinite(requestedMs) ? Math.round(requestedMs) : ceiling;
  const sleepMs = Math.min(ceiling, Math.max(LATENCY_FLOOR_MS, finite));
  return { kind: 'sleep', sleepMs, requestedMs, clamped: sleepMs !== requestedMs };
}

/** What the workflow does after the guardrails have looked at a decision. */
export type GuardedStep =
  | { kind: 'sleep'; sleepMs: number; requestedMs: number; clamped: boolean }
  | { kind: 'escalate'; reason: string; deadlock: boolean }
  | { kind: 'abandon'; reason: string };

/**
 * The rules no decision maker can override, applied once, in the workflow, after any provider: a
 * model's deadlock flag is ignored (the harness's own wait-for graph decides that, before any
 * decision is asked), a spent budget escalates whatever was decided, a retry without a delay never
 * reaches a sleep, and every sleep is bounded by `boundRetryDelay`.
 */
export function guardDecision(
  decision: RetryDecision,
  progress: RetryProgress,
  budget: RetryBudget,
): GuardedStep {
  if (decision.decision === 'abandon') return { kind: 'abandon', reason: decision.explanation };
  if (decision.decision === 'escalate') {
    return { kind: 'escalate', reason: decision.escalation_reason ?? decision.explanation, deadlock: false };
  }
  const requested = decision.retry_after_ms;
  if (typeof requested !== 'number') {
    return { kind: 'escalate', reason: 'a retry decision came without a delay', deadlock: false };
  }
  const bounded = boundRetryDelay(requested, progress, budget);
  if (bounded.kind === 'stop')
    return { kind: 'escalate', reason: `budget spent (${bounded.why})`, deadlock: false };
  return bounded;
}
