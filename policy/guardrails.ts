import type { BudgetLimit, RetryBudget } from './acquireRequest';
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
