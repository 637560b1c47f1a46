// Where sessions' log lines land: the worker's structured log.
import type { InjectedSinks } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { SessionLogSinks } from '../temporal/sinks';

/**
 * Where sessions' log lines land: the worker's structured log, each line joined to its session by
 * `sessionId` (the workflow id). Not called on replay.
 */
export function sessionLogSinks(log: Logger): InjectedSinks<SessionLogSinks> {
  return {
    sessionLog: {
      decided: {
        fn: (info, line) =>
          log.info({ event: 'retry-decision', sessionId: info.workflowId, ...line }, 'retry decision'),
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
