// The worker's Prometheus metrics (prom-client): what sessions, activities and the sweep count.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** How the worker's metrics are labelled. */
export interface MetricsOptions {
  registry?: Registry;
  /**
   * Label escalations and review flags with the lock key. Off by default: a label value per key is an
   * unbounded series count; turn it on only for a bounded, known set of keys.
   */
  keyLabels?: boolean;
}

// Seconds, from a hand-off of a few milliseconds to a wait of a quarter of an hour.
const WAIT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];
const HANDOFF_BUCKETS = [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];

/**
 * The worker's Prometheus metrics. Every label takes a value from a closed set (outcome, provider,
 * decision, fallback cause, result), so the number of series stays bounded; keys and requesters are
 * labels only when `keyLabels` says so.
 */
export function createMetrics({ registry = new Registry(), keyLabels = false }: MetricsOptions = {}) {
  const keyLabel = (key: string): { key?: string } => (keyLabels ? { key } : {});
  const withKey = <L extends string>(labels: readonly L[]) =>
    (keyLabels ? [...labels, 'key'] : [...labels]) as (L | 'key')[];
  const parked = new ParkedSessions();
  const metrics = {
    registry,
    keyLabel,
    parked,
    acquisitionWait: new Histogram({
      name: 'lockwarden_acquisition_wait_seconds',
      help: 'Time from a session start to the lease (outcome="acquired") or to its end without one',
      labelNames: ['outcome'] as const,
      buckets: WAIT_BUCKETS,
      registers: [registry],
    }),
    handoff: new Histogram({
      name: 'lockwarden_handoff_seconds',
      help: "Release to the woken waiter's grant, on the lock service's clock",
      buckets: HANDOFF_BUCKETS,
      registers: [registry],
    }),
    decisions: new Counter({
      name: 'lockwarden_decisions_total',
      help: 'Retry decisions, by who answered, what, and why the policy stood in (fallback_cause, "none")',
      labelNames: ['provider', 'decision', 'fallback_cause'] as const,
      registers: [registry],
    }),
    starvationRisk: new Counter({
      name: 'lockwarden_starvation_risk_total',
      help: 'Retry decisions applied, by the starvation risk they said (low, medium, high)',
      labelNames: ['level'] as const,
      registers: [registry],
    }),
    modelLatency: new Histogram({
      name: 'lockwarden_model_request_seconds',
      help: 'Time the model path took for one decision (repair included), by result: decision, fallback or thrown',
      labelNames: ['result'] as const,
      buckets: MODEL_BUCKETS,
      registers: [registry],
    }),
    modelRepairs: new Counter({
      name: 'lockwarden_model_repairs_total',
      help: 'Model answers that failed validation and were sent back once for repair, by result (valid after repair, or still-invalid: the policy answered)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    renewals: new Counter({
      name: 'lockwarden_renewals_total',
      help: 'Fenced lease renewals, by result (ok, or refused: the lease was lost)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    silentLeaseRenewals: new Counter({
      name: 'lockwarden_silent_lease_renewals_total',
      help: 'Renewals the sweep made for a holding session whose keeper fell silent (its worker died or stalled), by result',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    leasesLost: new Counter({
      name: 'lockwarden_leases_lost_total',
      help: 'Leases found lost, by where (a renewal or a release the lock service refused)',
      labelNames: ['at'] as const,
      registers: [registry],
    }),
    messagesRefused: new Counter({
      name: 'lockwarden_messages_refused_total',
      help: 'Messages a workflow refused instead of acting on them, by message and why (a malformed payload, a claim the lock service does not bear out, a release without its key)',
      labelNames: ['message', 'why'] as const,
      registers: [registry],
    }),
    forceReleases: new Counter({
      name: 'lockwarden_force_releases_total',
      help: "Operators' force-releases, by result (ok, or refused: the token was no longer current)",
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    orphanedReleases: new Counter({
      name: 'lockwarden_orphaned_releases_total',
      help: 'Leases a keeper released because its session ended without releasing (terminated, timed out), by result',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    unresponsiveWaiters: new Counter({
      name: 'lockwarden_unresponsive_waiters_total',
      help: 'Heads the sweep took out of their queue: woken for a minute at a free key, and never tried',
      registers: [registry],
    }),
    idleRecordsForgotten: new Counter({
      name: 'lockwarden_idle_records_forgotten_total',
      help: 'Records of idle keys and lapsed tickets the sweep had the lock service forget',
      registers: [registry],
    }),
    sweepDuration: new Histogram({
      name: 'lockwarden_sweep_duration_seconds',
      help: "One queue sweep's lock-service work: silent leases, stalled queues, forgetting idle keys",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
    escalationStoreProblems: new Counter({
      name: 'lockwarden_escalation_store_problems_total',
      help: 'Escalation store problems, by kind: torn-line (a line skipped on read), unreadable, unwritable (the page went out all the same)',
      labelNames: ['problem'] as const,
      registers: [registry],
    }),
    fairnessViolations: new Counter({
      name: 'lockwarden_fairness_violations_total',
      help: 'Waiters found overtaken by a later arrival of their priority when a key changed hands',
      registers: [registry],
    }),
    escalations: new Counter({
      name: 'lockwarden_escalations_total',
      help: 'Escalations to on-call, by whether a deadlock caused them',
      labelNames: withKey(['deadlock'] as const),
      registers: [registry],
    }),
    keysFlaggedForReview: new Counter({
      name: 'lockwarden_keys_flagged_for_review_total',
      help: 'Times a key was flagged for deadlock review after repeated escalations',
      labelNames: withKey([] as const),
      registers: [registry],
    }),
    modelSwitchedOff: new Gauge({
      name: 'lockwarden_model_switched_off',
      help: '1 while an operator has the model off for the namespace (lockctl model off), as this worker last read it',
      registers: [registry],
    }),
    labSingleProcess: new Gauge({
      name: 'lockwarden_lab_single_process',
      help: '1 when this worker both keeps leases and holds the model key (LOCKWARDEN_LAB_SINGLE_PROCESS, a lab only)',
      registers: [registry],
    }),
    parkedWaiters: new Gauge({
      name: 'lockwarden_parked_waiters',
      help: 'Sessions on this worker parked in a queue, waiting for a release',
      registers: [registry],
      collect() {
        this.set(parked.count());
      },
    }),
  };
  return metrics;
}
export type Metrics = ReturnType<typeof createMetrics>;

/** What the model worker's `/metrics` serves: the model path's metrics, none of the lock path's. */
export const MODEL_WORKER_METRICS: readonly string[] = [
  'lockwarden_decisions_total',
  'lockwarden_starvation_risk_total',
  'lockwarden_model_request_seconds',
  'lockwarden_model_repairs_total',
  'lockwarden_model_switched_off',
];

/**
 * The model worker's metrics: its calls and their latencies by result, its repairs, its decisions by
 * who answered and why the policy stood in (the fallback's cause), and the kill switch as it read it.
 * The lock path's metrics are left out of its registry: it has no lock, and a zero there would be a
 * second series beside the lock workers' own.
 */
export function createModelWorkerMetrics(): Metrics {
  const metrics = createMetrics();
  for (const { name } of metrics.registry.getMetricsAsArray())
    if (!MODEL_WORKER_METRICS.includes(name)) metrics.registry.removeSingleMetric(name);
  return metrics;
}

/**
 * The sessions parked right now, by run id, each with the latest time its park can last. A park that
 * ends while its run is on another worker (this one lost it) is forgotten when that time passes.
 */
export class ParkedSessions {
  private readonly until = new Map<string, number>();
  private static readonly SLACK_MS = 5_000;

  park(runId: string, upToMs: number, now = Date.now()): void {
    this.until.set(runId, now + upToMs + ParkedSessions.SLACK_MS);
  }

  unpark(runId: string): void {
    this.until.delete(runId);
  }

  count(now = Date.now()): number {
    for (const [runId, until] of this.until) if (until <= now) this.until.delete(runId);
    return this.until.size;
  }
}
