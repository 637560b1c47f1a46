// The release gates a briefing writes down: canary steps, soak, abort thresholds, rollback.
import { z } from 'zod';

/** The window of an abort threshold when the gates do not say (minutes). */
const DEFAULT_WINDOW_MINUTES = 10;

/**
 * The release gates a briefing sets for the patch's canary: the steps (percent of traffic, rising to
 * 100), how long each holds, and the abort thresholds, each a number. Read from `--gates` (YAML or JSON).
 */
export const releaseGatesSchema = z
  .strictObject({
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
      .refine(
        (abort) => Object.values(abort).some((v) => v !== undefined),
        'must set at least one threshold',
      ),
    /** The window each rate and quantile is taken over (minutes); 10 when absent. */
    windowMinutes: z
      .number()
      .int()
      .positive()
      .max(24 * 60)
      .default(10),
    /**
     * Where the automated rollback returns new sessions: the Worker Deployment and the Build ID that
     * ran before the patch (sessions already running stay pinned to the version that started them).
     */
    rollback: z
      .strictObject({
        deployment: z
          .string()
          .min(1)
          .max(200)
          .regex(/^[\w.\-]+$/, 'must be a deployment name'),
        previousBuildId: z
          .string()
          .min(1)
          .max(200)
          .regex(/^[\w.\-+]+$/, 'must be a build id'),
      })
      .optional(),
  })
  // Required of new gates (every abort criterion needs a target to roll back to: seed 004's
  // self-review); optional in the type, for the facts older runs recorded.
  .refine((gates) => gates.rollback !== undefined, {
    path: ['rollback'],
    message: 'must name the rollback target: { deployment, previousBuildId }',
  });
export type ReleaseGates = z.infer<typeof releaseGatesSchema>;

/**
 * The abort criteria of `gates`, each one sentence with its number, its time window and the metric
 * it is read from (lockwarden's own metrics; refused writes from the fenced resource's write log).
 */
export function abortCriteria(gates: ReleaseGates): string[] {
  const { abort } = gates;
  // Gates written before windowMinutes (briefings a client started then) read as the default.
  const over = `over ${gates.windowMinutes ?? DEFAULT_WINDOW_MINUTES} min`;
  const criteria: string[] = [];
  if (abort.leaseLostRate !== undefined)
    criteria.push(
      `lost holds exceed ${(abort.leaseLostRate * 100).toFixed(2)}% of acquisitions ${over} ` +
        '(lockwarden_leases_lost_total per lockwarden_acquisition_wait_seconds_count{outcome="acquired"})',
    );
  if (abort.staleWriteRefusalsPerHour !== undefined)
    criteria.push(
      `fenced resources refuse more than ${abort.staleWriteRefusalsPerHour} stale writes over 60 min (the fenced write log)`,
    );
  if (abort.p99WaitMs !== undefined)
    criteria.push(
      `the p99 acquisition wait exceeds ${abort.p99WaitMs} ms ${over} (lockwarden_acquisition_wait_seconds)`,
    );
  if (abort.errorBudgetBurn !== undefined)
    criteria.push(
      `a step burns more than ${(abort.errorBudgetBurn * 100).toFixed(0)}% of the error budget over its ${gates.soakMinutes}-min soak ` +
        '(lockwarden_acquisition_wait_seconds_count{outcome!="acquired"})',
    );
  return criteria;
}

/** The command that rolls new sessions back to the build before the patch, or null when none is given. */
export function rollbackCommand(gates: ReleaseGates): string | null {
  if (!gates.rollback) return null;
  return `temporal worker deployment set-current-version --deployment-name ${gates.rollback.deployment} --build-id ${gates.rollback.previousBuildId} --yes`;
}
