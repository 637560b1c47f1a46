import { Counter, Registry } from 'prom-client';

/** The worker's Prometheus metrics. */
export function createMetrics(registry = new Registry()) {
  return {
    registry,
    escalations: new Counter({
      name: 'lockwarden_escalations_total',
      help: 'Escalations to on-call, by lock key',
      labelNames: ['key', 'deadlock'] as const,
      registers: [registry],
    }),
    keysFlaggedForReview: new Counter({
      name: 'lockwarden_keys_flagged_for_review_total',
      help: 'Times a key was flagged for deadlock review after repeated escalations',
      labelNames: ['key'] as const,
      registers: [registry],
    }),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
