import type { Sinks } from '@temporalio/workflow';

/**
 * What a session reports to its worker's metrics, through a sink: fire and forget, no history event,
 * no effect on replay. The worker feeds these to Prometheus (activities/metrics.ts).
 */
export interface SessionMetricsSinks extends Sinks {
  sessionMetrics: {
    /** The acquisition phase ended: with the lease (`acquired`) or without it (the outcome's status). */
    acquisitionEnded(outcome: string, waitedMs: number): void;
    /** A release woke this session and it took the lease: release to grant, on the lock service's clock. */
    handedOff(ms: number): void;
    /** The session parked on one timer of at most `upToMs`, until woken or due. */
    parked(upToMs: number): void;
    /** The park ended (woken, due, or the session moved on). */
    unparked(): void;
    /** The lease keeper found the lease lost (its renewal refused, or the service out of reach). */
    leaseLost(at: 'renewal'): void;
    /** The workflow decided by its own policy, the decision activity having failed for good. */
    decidedInWorkflow(decision: string, fallbackCause: string): void;
  };
}

/** The sink's name on the worker. */
export const SESSION_METRICS_SINK = 'sessionMetrics';
