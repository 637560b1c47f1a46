// The starvation monitor's second input: keys whose retry decisions keep saying starvation is likely.
import type { RetryDecision } from './retryDecision';

/** A decision's starvation risk, as the decision schema allows it. */
export type StarvationRisk = RetryDecision['starvation_risk'];

/**
 * Counts, per key, the decisions that said starvation risk `high` within the last `windowMs`, and
 * says when a key reaches `threshold` of them: such a key is flagged for review as one that keeps
 * escalating is (activities/oncallActivities.ts), once a window. Pure bookkeeping, fed by the
 * decisions this process applies; nothing here reads a clock.
 */
export class HighStarvationRisk {
  private readonly highAt = new Map<string, number[]>();
  private readonly flaggedAt = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly threshold: number,
  ) {}

  /**
   * Notes one decision on `key` at `at` (ms); answers how many `high` ones the window holds when this
   * one makes the key flagged, else null.
   */
  note(key: string, risk: StarvationRisk, at: number): number | null {
    const since = at - this.windowMs;
    const recent = (this.highAt.get(key) ?? []).filter((t) => t > since);
    if (risk === 'high') recent.push(at);
    if (recent.length) this.highAt.set(key, recent);
    else this.highAt.delete(key);
    if (risk !== 'high' || recent.length < this.threshold) return null;
    const lastFlag = this.flaggedAt.get(key);
    if (lastFlag !== undefined && lastFlag > since) return null;
    this.flaggedAt.set(key, at);
    return recent.length;
  }
}
