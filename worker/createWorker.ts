// Builds lockwarden's own worker: its workflows, activities, sinks, versioning and slots.
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { createMetrics } from '../activities/metrics';
import { DEFAULT_MAX_CACHED_WORKFLOWS, DEFAULT_STICKY_SCHEDULE_TO_START_MS } from '../policy/constants';
import type { WorkerDeployment } from './config';
import { withKeeperSlots } from './activitySlots';
import { withIsolateTimeout } from './isolateTimeout';
import { lockwardenActivityInterceptors } from './localAttemptBound';
import { queueSweepPlugin } from './queueSweep';
import { sessionLogSinks } from './sessionLogSinks';
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
  /** How many sessions stay cached in the worker; DEFAULT_MAX_CACHED_WORKFLOWS when absent. */
  maxCachedWorkflows?: number;
  /** Register as this Worker Deployment Version, sessions pinned to it; absent: an unversioned worker. */
  deployment?: WorkerDeployment | null;
  /** How often the queue sweep looks for stalled queues; DEFAULT_QUEUE_SWEEP_MS when absent. */
  queueSweepMs?: number;
  /** More worker plugins, run before lockwarden's own: Temporal's OpenTelemetry plugin, for traces. */
  plugins?: WorkerOptions['plugins'];
}

/** Builds a worker that runs lockwarden's workflows and activities on one task queue. */
export function createLockwardenWorker(options: LockwardenWorkerOptions): Promise<Worker> {
  const metrics = options.deps.metrics ?? createMetrics();
  return Worker.create(
    withIsolateTimeout(
      withKeeperSlots({
        connection: options.connection,
        namespace: options.namespace,
        taskQueue: options.taskQueue,
        maxCachedWorkflows: options.maxCachedWorkflows ?? DEFAULT_MAX_CACHED_WORKFLOWS,
        stickyQueueScheduleToStartTimeout: DEFAULT_STICKY_SCHEDULE_TO_START_MS,
        activities: createActivities({ ...options.deps, metrics }),
        // Each local activity attempt bounded in the activity, not by the SDK core's leaking timer.
        interceptors: { activity: lockwardenActivityInterceptors },
        sinks: {
          ...sessionMetricsSinks(metrics),
          ...sessionLogSinks(options.deps.log, { metrics, oncall: options.deps.oncall }),
        },
        plugins: [
          ...(options.plugins ?? []),
          queueSweepPlugin({ ...options.deps, metrics, everyMs: options.queueSweepMs }),
        ],
        ...(options.workflows ?? { workflowsPath: WORKFLOWS_PATH }),
        ...(options.deployment ? { workerDeploymentOptions: pinnedTo(options.deployment) } : {}),
      }),
      options.isolateExecutionTimeoutMs,
    ),
  );
}

/**
 * Worker Versioning for lockwarden's workflows: every session is pinned to the version that started
 * it, so a running session never meets another version's workflow code; new sessions start on the
 * deployment's current version. The operator's side of an upgrade is in docs/versioning.md.
 */
export function pinnedTo(
  deployment: WorkerDeployment,
): NonNullable<WorkerOptions['workerDeploymentOptions']> {
  return {
    useWorkerVersioning: true,
    version: { deploymentName: deployment.name, buildId: deployment.buildId },
    defaultVersioningBehavior: 'PINNED',
  };
}
