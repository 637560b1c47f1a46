import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { openLockService } from '../locks/openLockService';
import { loadWorkerConfig } from './config';
import { createLockwardenWorker } from './createWorker';

/** The worker process: reads its configuration, opens the lock service and polls its task queue. */
async function main(): Promise<void> {
  const config = loadWorkerConfig();
  const log = pino({ level: config.logLevel, base: { service: 'lockwarden-worker' } });
  Runtime.install({ logger: new DefaultLogger(config.logLevel === 'silent' ? 'ERROR' : 'WARN') });
  const locks = await openLockService(config.lockServiceUrl, { maxTtlMs: config.lockMaxTtlMs });
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  try {
    const worker = await createLockwardenWorker({
      connection,
      namespace: config.namespace,
      taskQueue: config.taskQueue,
      deps: { locks, log },
    });
    log.info({ taskQueue: config.taskQueue, backend: locks.backend }, 'worker polling');
    await worker.run();
  } finally {
    await connection.close();
    await locks.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
