// The session's metrics and log lines, through sinks.
import { proxySinks } from '@temporalio/workflow';
import type { SessionLogSinks, SessionMetricsSinks } from '../../temporal/sinks';

/**
 * The session's metrics and log lines, reported to its worker through sinks (no history event,
 * skipped on replay).
 */
export const { sessionMetrics, sessionLog } = proxySinks<SessionMetricsSinks & SessionLogSinks>();
