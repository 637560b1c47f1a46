// The dev server the tests and benches use: its address, a connection, a quiet runtime and bundler.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  type Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import pino from 'pino';
import type { ActivityDeps } from '../activities';
import { createSessionWaker } from '../activities/sessionSignals';
import { temporalModelSwitch } from '../activities/modelSwitch';
import { SqliteLockService } from '../locks/sqliteLockService';
import { DEFAULT_TEMPORAL_ADDRESS } from '../policy/constants';
import { closeSafeRetries } from '../temporal/closeSafeRetries';
import { createLockwardenWorker, type LockwardenWorkerOptions, WORKFLOWS_PATH } from '../worker/createWorker';
import { freshSqlitePath, unique } from './tempFiles';

/** Address of the dev server the tests' global setup (or a benchmark) started. */
export const TEMPORAL_ADDRESS = process.env.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS;

/**
 * Lets the SDK's runtime log errors only: worker lifecycle lines and expected workflow failures would
 * drown a test report or a benchmark's table. Once per process, before any worker or connection.
 */
export function installQuietRuntime(): void {
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
}

/** A webpack logger for bundling workflow code that shows errors only. */
export const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message: string, meta?: unknown) => console.error(message, meta),
};

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** The workflow bundle, built once per process (webpack takes seconds; workers share it). */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
  return bundle;
}

/** A test environment connected to the dev server (never a downloaded one). */
export function connectTestEnv(address: string = TEMPORAL_ADDRESS): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createFromExistingServer({ address, plugins: [closeSafeRetries] });
}

/**
 * What a benchmark on the project's dev server needs: the server started if it is down
 * (scripts/temporal-server.sh), the SDK's runtime quiet, a connection, and a fresh SQLite lock
 * service; `close` lets go of both.
 */
export async function onProjectServer(): Promise<{
  env: TestWorkflowEnvironment;
  locks: SqliteLockService;
  close(): Promise<void>;
}> {
  execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'temporal-server.sh'), 'start'], {
    stdio: 'ignore',
  });
  installQuietRuntime();
  const env = await connectTestEnv();
  const locks = freshSqliteLockService();
  return {
    env,
    locks,
    async close() {
      await locks.close();
      await env.teardown();
    },
  };
}

/** A fresh SQLite lock service in its own temporary file. */
export function freshSqliteLockService(): SqliteLockService {
  return new SqliteLockService({ path: freshSqlitePath() });
}

/** A logger that records nothing, for activities run by tests and benchmarks. */
export const silentLog = pino({ level: 'silent' });

/** Runs `fn` while a lockwarden worker polls a fresh task queue, then shuts the worker down. */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  deps: Omit<ActivityDeps, 'waker'>,
  fn: (taskQueue: string, worker: Worker) => Promise<T>,
  options: Pick<LockwardenWorkerOptions, 'maxCachedWorkflows'> = {},
): Promise<T> {
  const taskQueue = unique('tq');
  const worker = await createLockwardenWorker({
    ...options,
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    deps: {
      modelSwitch: temporalModelSwitch(env.client, {
        log: deps.log,
        ...(deps.metrics ? { metrics: deps.metrics } : {}),
      }),
      ...deps,
      waker: createSessionWaker(env.client, deps.log),
    },
    workflows: { workflowBundle: await workflowBundle() },
  });
  return worker.runUntil(fn(taskQueue, worker));
}

let temporalBinary: string | undefined;

/**
 * Runs the Temporal CLI (the one scripts/install-temporal.sh provides) against the dev server, as an
 * operator would, and answers its stdout; a non-zero exit throws with its stderr.
 */
export function temporalCli(...args: string[]): string {
  temporalBinary ??= execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'install-temporal.sh')])
    .toString('utf8')
    .trim();
  return execFileSync(temporalBinary, [...args, '--address', TEMPORAL_ADDRESS], {
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString('utf8');
}
