// Where sessions' metric reports land: the worker's Prometheus metrics.
import type { InjectedSinks } from '@temporalio/worker';
import type { Metrics } from '../activities/metrics';
import type { SessionMetricsSinks } from '../temporal/sinks';

/**
 * Where sessions' metric reports land: the worker's Prometheus metrics. Not called on replay, so a
 * session replayed after a cache eviction or a worker restart is not counted twice.
 */
export function sessionMetricsSinks(metrics: Metrics): InjectedSinks<SessionMetricsSinks> {
  return {
    sessionMetrics: {
      acquisitionEnded: {
        fn: (_info, outcome, waitedMs) => metrics.acquisitionWait.observe({ outcome }, waitedMs / 1000),
      },
      handedOff: { fn: (_info, ms) => metrics.handoff.observe(ms / 1000) },
      parked: { fn: (info, upToMs) => metrics.parked.park(info.runId, upToMs) },
      unparked: { fn: (info) => metrics.parked.unpark(info.runId) },
      leaseLost: { fn: (_info, at) => metrics.leasesLost.inc({ at }) },
      messageRefused: { fn: (_info, message, why) => metrics.messagesRefused.inc({ message, why }) },
      decidedInWorkflow: {
        fn: (_info, decision, fallbackCause) =>
          metrics.decisions.inc({ provider: 'policy', decision, fallback_cause: fallbackCause }),
      },
    },
  };
}
