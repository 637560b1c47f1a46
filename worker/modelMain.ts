#!/usr/bin/env node
// `lockwarden-model-worker`: the model role's process, with no lock-service setting.
import { Client } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { connectOrExplain } from '../temporal/connectFailure';
import { NativeConnection } from '@temporalio/worker';
import pino from 'pino';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { createAnthropicDrafter } from '../activities/anthropicDrafter';
import { loadModelWorkerConfig } from './modelWorkerConfig';
import { createModelWorker } from './modelWorker';
import { withSecretFiles } from './secretFiles';
import { createModelWorkerMetrics } from '../activities/metrics';
import { startRuntimeAndMetrics } from './runtimeAndMetrics';
import { isInvalidConfiguration } from '../policy/errors';
import { tracingFromEnv } from '../temporal/tracing';

/**
 * `lockwarden-model-worker`: the model role. It holds the model key and no lock-service setting (it
 * refuses to start beside one), and serves the lock workers' retry decisions and briefing drafts.
 */
async function main(): Promise<void> {
  const config = loadModelWorkerConfig(withSecretFiles(process.env));
  const log = pino({
    level: config.logLevel,
    base: { service: 'lockwarden-model-worker' },
    redact: ['apiKey', '*.apiKey'],
  });
  // Traces when the OTEL_* variables ask for them: a decision's span joins its session's trace.
  const tracing = tracingFromEnv(process.env, 'lockwarden-model-worker');
  // Its calls, latencies, repairs and fallbacks by cause (activities/metrics.ts), and the SDK's.
  const metrics = createModelWorkerMetrics();
  const metricsServer = await startRuntimeAndMetrics(config.logLevel, config.metrics, metrics.registry);
  const connection = await connectOrExplain(config.temporal, () =>
    NativeConnection.connect(config.temporal.connectionOptions),
  );
  // Reads the operators' kill switch (lockctl model off); nothing else of Temporal's is asked here.
  const client = new Client({
    connection: await connectOrExplain(config.temporal, () =>
      connectTemporal(config.temporal.connectionOptions),
    ),
    namespace: config.temporal.namespace,
  });
  try {
    const worker = await createModelWorker({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.taskQueue,
      decider: config.model ? createAnthropicDecider(config.model) : null,
      drafter: config.model ? createAnthropicDrafter(config.model) : null,
      log,
      client,
      metrics,
      plugins: tracing ? [tracing.plugin] : [],
    });
    log.info(
      {
        temporal: config.temporal.summary,
        taskQueue: config.taskQueue,
        model: config.model?.model ?? 'none (deterministic policy)',
        metrics: config.metrics ? `http://${config.metrics.host}:${config.metrics.port}/metrics` : 'off',
      },
      'model worker polling',
    );
    await worker.run();
  } finally {
    await connection.close();
    await client.connection.close();
    metricsServer?.close();
    await tracing?.shutdown();
  }
}

// A setting that is wrong ends the process with one line naming it and exit code 2; anything else, 1.
main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(isInvalidConfiguration(error) ? 2 : 1);
});
