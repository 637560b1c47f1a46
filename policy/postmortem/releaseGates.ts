import { z } from 'zod';

/**
 * The release gates a briefing sets for the patch's canary: the steps (percent of traffic, rising to
 * 100), how long each holds, and the abort thresholds, each a number. Read from `--gates` (YAML or JSON).
 */
export const releaseGatesSchema = z.strictObject({
  canaryPercent: z
    .array(z.number().positive().max(100))
    .min(1)
    .refine((steps) => steps.every((p, i) => i === 0 || p > steps[i - 1]!), 'must rise step by step')
    .refine((steps) => steps.at(-1) === 100, 'must end at 100'),
  soakMinutes: z
    .number()
    .int()
    .positive()
    .max(24 * 60),
  abort: z
    .strictObject({
      /** Lost holds per acquisition above which the canary stops. */
      leaseLostRate: z.number().min(0).max(1).optional(),
      /** Stale writes refused by a fenced resource, per hour, above which it stops. */
      staleWriteRefusalsPerHour: z.number().min(0).optional(),
      /** The p99 acquisition wait above which it stops. */
      p99WaitMs: z.number().int().positive().optional(),
      /** The share of the error budget burnt in one step above which it stops. */
      errorBudgetBurn: z.number().positive().max(1).optional(),
    })
    .refine((abort) => Object.values(abort).some((v) => v !== undefined), 'must set at least one threshold'),
});
export type ReleaseGates = z.infer<typeof releaseGatesSchema>;

/** The abort criteria of `gates`, each one sentence with its number. */
export function abortCriteria(gates: ReleaseGates): string[] {
  const { abort } = gates;
  const criteria: string[] = [];
  if (abort.leaseLostRate !== undefined)
    criteria.push(`lost holds exceed ${(abort.leaseLostRate * 100).toFixed(2)}% of acquisitions`);
  if (abort.staleWriteRefusalsPerHour !== undefined)
    criteria.push(
      `fenced resources refuse more than ${abort.staleWriteRefusalsPerHour} stale writes per hour`,
    );
  if (abort.p99WaitMs !== undefined) criteria.push(`the p99 acquisition wait exceeds ${abort.p99WaitMs} ms`);
  if (abort.errorBudgetBurn !== undefined)
    criteria.push(`a step burns more than ${(abort.errorBudgetBurn * 100).toFixed(0)}% of the error budget`);
  return criteria;
}
