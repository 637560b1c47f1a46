/** How far the harness spreads a model's delay each way (the retry harness jitters a model's delay client-side). */
const MODEL_DELAY_JITTER = 0.2;

/**
 * A model's requested delay with jitter applied client-side, so waiters given the same advice do not
 * come back in a herd: uniform in ±MODEL_DELAY_JITTER of the request. The guardrails bound the result
 * afterwards, as any delay. `sample` is in [0, 1), from the workflow's replay-safe generator.
 */
export function jitterModelDelay(requestedMs: number, sample: number): number {
  return Math.round(requestedMs * (1 - MODEL_DELAY_JITTER + 2 * MODEL_DELAY_JITTER * sample));
}

/** Inputs of one decorrelated-jitter step; every value is in milliseconds. */
interface JitterStep {
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
