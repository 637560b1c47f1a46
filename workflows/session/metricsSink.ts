import { proxySinks } from '@temporalio/workflow';
import type { SessionMetricsSinks } from '../../temporal/sinks';

/** The session's metrics, reported to its worker through a sink (no history event, skipped on replay). */
export const { sessionMetrics } = proxySinks<SessionMetricsSinks>();
