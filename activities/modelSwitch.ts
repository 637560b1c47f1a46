// A worker's reading of the model kill switch: one describe per interval, only when a model is asked.
import type { Client } from '@temporalio/client';
import { modelSwitchStatus } from '../client/modelSwitch';
import type { Logger } from 'pino';
import { MODEL_SWITCH_READ_EVERY_MS, type ModelSwitchState } from '../policy/decisions/modelSwitch';
import type { Metrics } from './metrics';

/** Whether the model is off for the namespace, as a worker last read it. */
export interface ModelSwitchReader {
  read(): Promise<ModelSwitchState>;
}

/**
 * Reads the switch from Temporal: the model is off while the switch's workflow runs (its memo says who
 * turned it off and why). A reading is trusted for MODEL_SWITCH_READ_EVERY_MS; concurrent callers share
 * one describe. While Temporal cannot answer, the last reading stands (on, before any), and says so in
 * a warning: the switch is a brake an operator pulls, not a dependency a model call waits on.
 */
export function temporalModelSwitch(
  client: Client,
  {
    log,
    metrics,
    everyMs = MODEL_SWITCH_READ_EVERY_MS,
  }: { log?: Logger; metrics?: Metrics; everyMs?: number } = {},
): ModelSwitchReader {
  let last: ModelSwitchState = { model: 'on' };
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<ModelSwitchState> | null = null;

  async function describe(): Promise<ModelSwitchState> {
    try {
      return await modelSwitchStatus(client);
    } catch (error) {
      log?.warn(
        { event: 'model-switch.unread', error: (error as Error).message, kept: last.model },
        'could not read the model switch; keeping the last reading',
      );
      return last;
    }
  }

  return {
    read() {
      if (performance.now() - readAt < everyMs) return Promise.resolve(last);
      reading ??= describe().then((state) => {
        last = state;
        readAt = performance.now();
        reading = null;
        metrics?.modelSwitchedOff.set(state.model === 'off' ? 1 : 0);
        return state;
      });
      return reading;
    },
  };
}

/** The reader of a worker with no Temporal client to read it with: the model is always on. */
export const MODEL_ALWAYS_ON: ModelSwitchReader = { read: async () => ({ model: 'on' }) };
