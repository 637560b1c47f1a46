/** Inputs of one decorrelated-jitter step; every value is in milliseconds. */
export interface JitterStep {
  previousMs: number;
  baseMs: number;
  capMs: number;
}

/**
 * Decorrelated jitter (AWS Architecture Blog, "Exponential Backoff and Jitter"): the next delay is
 * uniform in [base, 3 x previous], capped. `random` is injected so a workflow can pass its
 * deterministic, replay-safe generator and a test can pass a fixed sequence.
 */
export function decorrelatedJitter({ previousMs, baseMs, capMs }: JitterStep, random: () => number): number {
  const upper = Math.max(baseMs, previousMs * 3);
  return Math.min(capMs, Math.floor(baseMs + random() * (upper - baseMs)));
}
