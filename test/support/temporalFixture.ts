import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import pino from 'pino';
import type { ActivityDeps } from '../../activities';
import { FileEscalationStore } from '../../activities/escalationStore';
import { createSessionWaker } from '../../activities/sessionSignals';
import { SqliteLockService } from '../../locks/sqliteLockService';
import { DEFAULT_TEMPORAL_ADDRESS } from '../../policy/constants';
import { createLockwardenWorker, WORKFLOWS_PATH } from '../../worker/createWorker';
import { freshSqlitePath, unique } from './tempFiles';

export { unique };

// Worker lifecycle lines and expected workflow failures would drown the test report; errors still show.
Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
});

/** Address of the dev server jest's global setup started. */
export const TEMPORAL_ADDRESS = process.env.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS;

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** The workflow bundle, built once per test file (webpack takes seconds; workers share it). */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
  return bundle;
}

/** A test environment connected to the dev server (never a downloaded one). */
export function connectTestEnv(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createFromExistingServer({ address: TEMPORAL_ADDRESS });
}

/** A fresh SQLite lock service in its own temporary file. */
export function freshSqliteLockService(): SqliteLockService {
  return new SqliteLockService({ path: freshSqlitePath() });
}

/** A logger that records nothing, for activities under test. */
export const silentLog = pino({ level: 'silent' });

/** Runs `fn` while a lockwarden worker polls a fresh task queue, then shuts the worker down. */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  deps: Omit<ActivityDeps, 'waker'>,
  fn: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueue = unique('tq');
  const worker = await createLockwardenWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    deps: { ...deps, waker: createSessionWaker(env.client, deps.log) },
    workflows: { workflowBundle: await workflowBundle() },
  });
  return worker.runUntil(fn(taskQueue));
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message: string, meta?: unknown) => console.error(message, meta),
};

/** What a describe block of session tests shares: set by the hooks {@link sessionFixture} installs. */
export interface SessionFixture {
  env: TestWorkflowEnvironment;
  /** A fresh SQLite lock service for each test. */
  locks: SqliteLockService;
  /** A fresh escalation store for each test. */
  escalations: FileEscalationStore;
}

/**
 * Installs the hooks most session tests share: the dev server's environment for the block, and a
 * fresh lock service and escalation store for each test. Read the fields inside tests and hooks.
 */
export function sessionFixture(): SessionFixture {
  const fixture = {} as SessionFixture;
  beforeAll(async () => {
    fixture.env = await connectTestEnv();
  });
  afterAll(() => fixture.env?.teardown());
  beforeEach(() => {
    fixture.locks = freshSqliteLockService();
    fixture.escalations = new FileEscalationStore(freshSqlitePath().replace(/\.sqlite$/, '.jsonl'));
  });
  afterEach(() => fixture.locks.close());
  return fixture;
}
