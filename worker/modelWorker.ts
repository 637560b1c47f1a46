// The model worker: retry decisions and drafting on a queue of their own, no workflow, no lock.
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createBriefingActivities, type Drafter } from '../activities/briefingActivities';
import { createDecisionActivities, type Decider } from '../activities/decisionActivities';
import type { Metrics } from '../activities/metrics';
import { MODEL_ALWAYS_ON, temporalModelSwitch } from '../activities/modelSwitch';
import type { Client } from '@temporalio/client';

/** What the model worker needs: its queue, and the model lanes (null: the policy and the template answer). */
export interface ModelWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  /** The model worker's own task queue: lock workers send decisions here (LOCKWARDEN_MODEL_TASK_QUEUE). */
  taskQueue: string;
  decider: Decider | null;
  drafter: Drafter | null;
  log: Logger;
  metrics?: Metrics;
  /**
   * A client of the namespace, to read the operators' kill switch (`lockctl model off`) with; absent,
   * the switch is not read and the model is always on.
   */
  client?: Client;
  /** Worker plugins: Temporal's OpenTelemetry plugin, so a decision's span joins its session's trace. */
  plugins?: WorkerOptions['plugins'];
}

/**
 * The model worker: the retry-decision and drafting activities, and nothing else, on their own task
 * queue. It runs no workflow and opens no lock service; its module graph has no path to `locks/`
 * (test/boundary.test.ts), and it is meant to run where the lock service cannot be reached at all
 * (test/modelWorkerIsolation.test.ts).
 */
export function createModelWorker(options: ModelWorkerOptions): Promise<Worker> {
  const { log, metrics } = options;
  const modelSwitch = options.client
    ? temporalModelSwitch(options.client, { log, metrics })
    : MODEL_ALWAYS_ON;
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    plugins: options.plugins ?? [],
    activities: {
      ...createDecisionActivities({ decider: options.decider, log, metrics, modelSwitch }),
      ...createBriefingActivities({ drafter: options.drafter, log, modelSwitch }),
    },
  });
}
