// LockwardenPlugin: lockwarden's workflows and activities added to a worker of the user's own.
import { lockwardenActivityInterceptors } from './localAttemptBound';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { SimplePlugin } from '@temporalio/plugin';
import type { BundleOptions, ReplayWorkerOptions, WorkerOptions } from '@temporalio/worker';
import pino, { type Logger } from 'pino';
import { createActivities } from '../activities';
import type { Drafter } from '../activities/briefingActivities';
import type { Decider } from '../activities/decisionActivities';
import type { EscalationStore } from '../activities/escalationStore';
import { createMetrics, type Metrics } from '../activities/metrics';
import type { OnCallConfig } from '../activities/oncallActivities';
import { createSessionWaker } from '../activities/sessionSignals';
import type { LockService } from '../locks/lockService';
import { DEFAULT_STICKY_SCHEDULE_TO_START_MS } from '../policy/constants';
import type { OperatorHoldLimits } from '../policy/decisions/holdLimits';
import { WORKFLOWS_PATH } from './createWorker';
import { InvalidConfigurationError } from '../policy/errors';
import { temporalModelSwitch } from '../activities/modelSwitch';
import { withKeeperSlots } from './activitySlots';
import { withIsolateTimeout } from './isolateTimeout';
import { sweepIntervalMs, withQueueSweep } from './queueSweep';
import { sessionLogSinks } from './sessionLogSinks';
import { sessionMetricsSinks } from './sessionMetricsSinks';

/** What lockwarden needs inside a user's worker: its lock service and its side effects' targets. */
export interface LockwardenPluginOptions {
  /** The lock service sessions acquire from (see `openLockService`); the caller closes it. */
  locks: LockService;
  /** A Temporal client in the worker's namespace: a release wakes the next waiter with a signal through it. */
  client: Client;
  /**
   * Retry decisions from a model in this worker (createAnthropicDecider): only with
   * `labSingleProcess`, since a worker that keeps leases holds no model key (seed 003). Use
   * `modelTaskQueue` instead; absent both, the deterministic policy decides.
   */
  decider?: Decider | null;
  /** Post-mortem drafting by a model in this worker (createAnthropicDrafter): as `decider`, a lab's only. */
  drafter?: Drafter | null;
  /**
   * The lab-only single-process mode: this worker both keeps leases and calls a model. Every decision
   * record and the metric `lockwarden_lab_single_process` say so. Never in production.
   */
  labSingleProcess?: boolean;
  /** Refuse a request's constraint in no known form, instead of accepting it as advisory. */
  strictConstraints?: boolean;
  /**
   * The model worker's task queue (`lockwarden-model-worker`, or createModelWorker): sessions ask for
   * retry decisions there, and this worker needs no model key. Absent: decided in this worker.
   */
  modelTaskQueue?: string;
  oncall?: OnCallConfig;
  escalations?: EscalationStore;
  /** Where lockwarden's metrics go; serve `metrics.registry` on your /metrics. */
  metrics?: Metrics;
  log?: Logger;
  /**
   * How long one workflow activation may run in this worker, unless the worker's own
   * `isolateExecutionTimeout` says otherwise; DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS when absent.
   */
  isolateExecutionTimeoutMs?: number;
  /** How often the worker sweeps (worker/queueSweep.ts); 5 s when absent, and at most 5 s. */
  queueSweepMs?: number;
  /** The longest hold limit and holder TTL a request may ask for; DEFAULT_OPERATOR_HOLD_LIMITS when absent. */
  holdLimits?: OperatorHoldLimits;
}

/**
 * lockwarden as a Temporal worker plugin: add it to the worker that already serves your task queue
 * (`Worker.create({ ..., plugins: [new LockwardenPlugin({ locks, client })] })`) and that worker
 * runs lockwarden's sessions, releases, status reads and briefings beside your own workflows, with
 * lockwarden's activities and metrics. Your workflows module is bundled together with lockwarden's;
 * a worker with a prebuilt bundle builds it with `bundleWorkflowCode({ ..., plugins: [plugin] })`.
 */
export class LockwardenPlugin extends SimplePlugin {
  /** lockwarden's metrics in this worker: serve `metrics.registry` on your /metrics. */
  readonly metrics: Metrics;
  private readonly isolateExecutionTimeoutMs: number | undefined;
  private readonly log: Logger;
  private readonly oncall: OnCallConfig | undefined;

  constructor(options: LockwardenPluginOptions) {
    sweepIntervalMs(options.queueSweepMs); // a bad interval fails here, not when the worker runs
    if ((options.decider || options.drafter) && !options.labSingleProcess)
      throw new InvalidConfigurationError([
        'decider/drafter: a worker that keeps leases calls no model; run the model worker apart ' +
          '(createModelWorker) and pass modelTaskQueue, or set labSingleProcess: true in a lab',
      ]);
    const metrics = options.metrics ?? createMetrics();
    const log = options.log ?? pino({ base: { service: 'lockwarden' } });
    const waker = createSessionWaker(options.client, log);
    super({
      name: 'lockwarden',
      activities: createActivities({
        locks: options.locks,
        log,
        waker,
        decider: options.decider ?? null,
        drafter: options.drafter ?? null,
        modelTaskQueue: options.modelTaskQueue ?? null,
        labSingleProcess: options.labSingleProcess ?? false,
        strictConstraints: options.strictConstraints ?? false,
        ...(options.holdLimits ? { holdLimits: options.holdLimits } : {}),
        oncall: options.oncall,
        escalations: options.escalations,
        metrics,
        modelSwitch: temporalModelSwitch(options.client, { log, metrics }),
      }),
      // Each local activity attempt bounded in the activity (worker/localAttemptBound.ts).
      workerInterceptors: { activity: lockwardenActivityInterceptors },
      // The queue sweep runs beside the worker: see worker/queueSweep.ts.
      runContext: (next) =>
        withQueueSweep({ locks: options.locks, waker, log, metrics, everyMs: options.queueSweepMs }, next),
    });
    this.metrics = metrics;
    this.oncall = options.oncall;
    this.log = log;
    this.isolateExecutionTimeoutMs = options.isolateExecutionTimeoutMs;
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    const configured = super.configureWorker(options);
    return withIsolateTimeout(
      withKeeperSlots({
        ...configured,
        // A prebuilt bundle already holds lockwarden's workflows (bundled with this plugin).
        ...(configured.workflowBundle
          ? {}
          : { workflowsPath: withLockwardenWorkflows(configured.workflowsPath) }),
        sinks: {
          ...configured.sinks,
          ...sessionMetricsSinks(this.metrics),
          ...sessionLogSinks(this.log, { metrics: this.metrics, oncall: this.oncall }),
        },
        // A burst of hand-offs outlasts the SDK's 10 s on the sticky queue (see the constant).
        stickyQueueScheduleToStartTimeout:
          configured.stickyQueueScheduleToStartTimeout ?? DEFAULT_STICKY_SCHEDULE_TO_START_MS,
      }),
      this.isolateExecutionTimeoutMs,
    );
  }

  override configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const configured = super.configureReplayWorker(options);
    if (configured.workflowBundle) return configured;
    return { ...configured, workflowsPath: withLockwardenWorkflows(configured.workflowsPath) };
  }

  override configureBundler(options: BundleOptions): BundleOptions {
    const configured = super.configureBundler(options);
    return { ...configured, workflowsPath: withLockwardenWorkflows(configured.workflowsPath) };
  }
}

/** Where the plugin writes the modules it bundles, under the project's `node_modules/.cache`. */
const COMBINED_DIR_NAME = path.join('.cache', 'lockwarden');

/**
 * A workflows module that exports the user's workflows and lockwarden's, written once per user module
 * (lockwarden's alone when the worker has none of its own). It is written where the bundler resolves
 * `@temporalio/workflow` as the user's module does: the `node_modules/.cache` of the user's project.
 */
export function withLockwardenWorkflows(userWorkflowsPath: string | undefined): string {
  if (!userWorkflowsPath || path.resolve(userWorkflowsPath) === WORKFLOWS_PATH) return WORKFLOWS_PATH;
  // The worker configures, then bundles with the same plugins: a module written here is already whole.
  if (path.dirname(path.resolve(userWorkflowsPath)).endsWith(COMBINED_DIR_NAME)) return userWorkflowsPath;
  const user = require.resolve(path.resolve(userWorkflowsPath));
  const source =
    `// Written by lockwarden's worker plugin: your workflows and lockwarden's, in one bundle.\n` +
    `export * from ${JSON.stringify(user)};\nexport * from ${JSON.stringify(WORKFLOWS_PATH)};\n`;
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const combined = path.join(nodeModulesOf(user), COMBINED_DIR_NAME, `workflows-${digest}.js`);
  if (!fs.existsSync(combined)) {
    fs.mkdirSync(path.dirname(combined), { recursive: true });
    const partial = `${combined}.${process.pid}`;
    fs.writeFileSync(partial, source);
    fs.renameSync(partial, combined); // whole or absent, if two workers start at once
  }
  return combined;
}

// The nearest node_modules above `file` (the user's project's), else the project lockwarden runs from.
function nodeModulesOf(file: string): string {
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules');
    if (fs.existsSync(path.join(candidate, '@temporalio', 'workflow'))) return candidate;
    if (path.dirname(dir) === dir) return path.join(path.dirname(WORKFLOWS_PATH), '..', 'node_modules');
  }
}
