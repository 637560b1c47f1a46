// Where sessions' log lines land: the worker's structured log, and the starvation monitor's count of
// decisions that keep saying starvation is likely.
import type { InjectedSinks } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Metrics } from '../activities/metrics';
import { DEFAULT_ONCALL, type OnCallConfig } from '../activities/oncallActivities';
import { HighStarvationRisk, type StarvationRisk } from '../policy/decisions/starvationWatch';
import type { SessionLogSinks } from '../temporal/sinks';

/** What the decision lines feed besides the log: their count by starvation risk, and the monitor. */
interface DecisionWatch {
  metrics: Metrics;
  /** The review window and threshold, as for keys that keep escalating. */
  oncall?: Pick<OnCallConfig, 'reviewWindowMs' | 'reviewThreshold'>;
}

/**
 * Where sessions' log lines land: the worker's structured log, each line joined to its session by
 * `sessionId` (the workflow id). Not called on replay. Each decision line is counted by its
 * starvation risk, and a key whose decisions say `high` as often as the review threshold within the
 * review window is flagged for review (`lock.flagged-for-review`, reason `starvation-risk`), as a key
 * that keeps escalating is.
 */
export function sessionLogSinks(log: Logger, watch?: DecisionWatch): InjectedSinks<SessionLogSinks> {
  const oncall = watch?.oncall ?? DEFAULT_ONCALL;
  const highRisk = new HighStarvationRisk(oncall.reviewWindowMs, oncall.reviewThreshold);
  return {
    sessionLog: {
      decided: {
        fn: (info, line) => {
          log.info({ event: 'retry-decision', sessionId: info.workflowId, ...line }, 'retry decision');
          if (!watch) return;
          watch.metrics.starvationRisk.inc({ level: line.starvationRisk });
          const flaggedWith = highRisk.note(line.key, line.starvationRisk as StarvationRisk, Date.now());
          if (flaggedWith === null) return;
          watch.metrics.keysFlaggedForReview.inc(watch.metrics.keyLabel(line.key));
          log.warn(
            {
              event: 'lock.flagged-for-review',
              key: line.key,
              reason: 'starvation-risk',
              highRiskDecisions: flaggedWith,
              windowMs: oncall.reviewWindowMs,
            },
            'key flagged for review: its retry decisions keep saying starvation is likely',
          );
        },
      },
      acquisitionEnded: {
        fn: (info, line) =>
          log.info(
            { event: 'acquisition-outcome', sessionId: info.workflowId, ...line },
            'acquisition ended',
          ),
      },
    },
  };
}
