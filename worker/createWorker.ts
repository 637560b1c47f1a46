import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { createMetrics } from '../activities/metrics';
import { withIsolateTimeout } from './isolateTimeout';
import { sessionMetricsSinks } from './sessionMetricsSinks';

/** Where the worker finds workflow code: a prebuilt bundle (tests share one) or the source path. */
export type WorkflowSource = Pick<WorkerOptions, 'workflowBundle'> | Pick<WorkerOptions, 'workflowsPath'>;

/** Path of the workflow entry point, for `workflowsPath` and for `bundleWorkflowCode`. */
export const WORKFLOWS_PATH = require.resolve('../workflows');

/** Options for {@link createLockwardenWorker}. */
export interface LockwardenWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  workflows?: WorkflowSource;
  /** How long one workflow activation may run; DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS when absent. */
  isolateExecutionTimeoutMs?: number;
}

/** Builds a worker that runs lockwarden's workflows and activities on one task queue. */
export function createLockwardenWorker(options: LockwardenWorkerOptions): Promise<Worker> {
  const metrics = options.deps.metrics ?? createMetrics();
  return Worker.create(
    withIsolateTimeout(
      {
        connection: options.connection,
        namespace: options.namespace,
        taskQueue: options.taskQueue,
        activities: createActivities({ ...options.deps, metrics }),
        sinks: sessionMetricsSinks(metrics),
        ...(options.workflows ?? { workflowsPath: WORKFLOWS_PATH }),
      },
      options.isolateExecutionTimeoutMs,
    ),
  );
}
