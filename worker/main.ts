#!/usr/bin/env node
// `lockwarden-worker`: the lock worker's process, configured by the environment.
import { Client } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { connectOrExplain } from '../temporal/connectFailure';
import { NativeConnection } from '@temporalio/worker';
import pino from 'pino';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { createAnthropicDrafter } from '../activities/anthropicDrafter';
import { FileEscalationStore } from '../activities/escalationStore';
import { createMetrics } from '../activities/metrics';
import { createSessionWaker } from '../activities/sessionSignals';
import { temporalModelSwitch } from '../activities/modelSwitch';
import { openLockService } from '../locks/openLockService';
import { decisionMode, loadWorkerConfig } from './config';
import { startRuntimeAndMetrics } from './runtimeAndMetrics';
import { isInvalidConfiguration } from '../policy/errors';
import { withSecretFiles } from './secretFiles';
import { tracingFromEnv } from '../temporal/tracing';
import { loadModelConfig } from './modelConfig';
import { createLockwardenWorker } from './createWorker';
import { missingSearchAttributes } from './searchAttributeCheck';

/** The worker process: reads its configuration, opens the lock service and polls its task queue. */
async function main(): Promise<void> {
  const env = withSecretFiles(process.env);
  const config = loadWorkerConfig(env);
  const modelConfig = loadModelConfig(env);
  const mode = decisionMode(config, modelConfig !== null);
  // The API key travels in a request header only; redact it should an object carrying it ever be logged.
  const log = pino({
    level: config.logLevel,
    base: { service: 'lockwarden-worker' },
    redact: ['apiKey', '*.apiKey'],
  });
  // Traces when the OTEL_* variables ask for them (temporal/tracing.ts): off otherwise.
  const tracing = tracingFromEnv(env, 'lockwarden-worker');
  const metrics = createMetrics({ keyLabels: config.metrics?.keyLabels ?? false });
  const metricsServer = await startRuntimeAndMetrics(config.logLevel, config.metrics, metrics.registry);
  const locks = await openLockService(config.lockServiceUrl, {
    maxTtlMs: config.lockMaxTtlMs,
    ...config.lockLimits,
    // A record lockwarden did not write is left out of the sweep's and the graph's lists: said here.
    onCorrupt: (error) =>
      log.error({ event: 'lock.corrupt-record', key: error.key, problems: error.problems }, error.message),
  });
  const connection = await connectOrExplain(config.temporal, () =>
    NativeConnection.connect(config.temporal.connectionOptions),
  );
  // The activities' own client: a release wakes the next waiter with a signal sent from the activity.
  const client = new Client({
    connection: await connectOrExplain(config.temporal, () =>
      connectTemporal(config.temporal.connectionOptions),
    ),
    namespace: config.temporal.namespace,
    // The wake-up a release sends carries the release's trace: the woken waiter's wait links to it.
    plugins: tracing ? [tracing.plugin] : [],
  });
  try {
    const missing = await missingSearchAttributes(client, config.temporal.namespace);
    if (missing.length)
      throw new Error(
        `namespace ${config.temporal.namespace} has not registered the search attribute(s) ${missing.join(', ')}: ` +
          'register them first (docs/operations.md, "Running on more than one machine"), or sessions would fail as they upsert them',
      );
    const worker = await createLockwardenWorker({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.taskQueue,
      isolateExecutionTimeoutMs: config.isolateExecutionTimeoutMs,
      maxCachedWorkflows: config.maxCachedWorkflows,
      queueSweepMs: config.queueSweepMs,
      deployment: config.deployment,
      plugins: tracing ? [tracing.plugin] : [],
      deps: {
        locks,
        log,
        decider: modelConfig ? createAnthropicDecider(modelConfig) : null,
        drafter: modelConfig ? createAnthropicDrafter(modelConfig) : null,
        oncall: config.oncall,
        escalations: new FileEscalationStore(config.escalationsFile, {
          maxBytes: config.escalationsMaxBytes,
          onSkippedLines: (count, file) => {
            metrics.escalationStoreProblems.inc({ problem: 'torn-line' }, count);
            log.warn({ event: 'escalation-store.torn-lines', count, file }, 'escalation store lines skipped');
          },
        }),
        metrics,
        waker: createSessionWaker(client, log),
        modelSwitch: temporalModelSwitch(client, { log, metrics }),
        modelTaskQueue: config.modelTaskQueue,
        holdLimits: config.holdLimits,
        strictConstraints: config.strictConstraints,
        labSingleProcess: mode === 'lab-single-process',
      },
    });
    if (mode === 'lab-single-process')
      log.warn(
        { mode },
        'lab single-process mode (LOCKWARDEN_LAB_SINGLE_PROCESS): this process keeps leases and holds the model key; ' +
          'never in production: run lockwarden-model-worker apart (docs/operations.md, "Two worker roles")',
      );
    log.info(
      {
        temporal: config.temporal.summary,
        taskQueue: config.taskQueue,
        backend: locks.backend,
        model: config.modelTaskQueue
          ? `on the model worker's queue ${config.modelTaskQueue}`
          : (modelConfig?.model ?? 'none (deterministic policy)'),
        deployment: config.deployment
          ? `${config.deployment.name}:${config.deployment.buildId}`
          : 'unversioned',
        traces: tracing ? 'exported over OTLP (OTEL_* variables)' : 'off',
      },
      'worker polling',
    );
    await worker.run();
  } finally {
    await connection.close();
    await client.connection.close();
    await locks.close();
    metricsServer?.close();
    await tracing?.shutdown();
  }
}

// A setting that is wrong ends the process with one line naming it and exit code 2; anything else, 1.
main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(isInvalidConfiguration(error) ? 2 : 1);
});
