// The scale bench's worker: one lockwarden worker process, on a lock service whose calls it counts
// and writes to SCALE_COUNTS every second, so the bench can read its CPU, memory and calls apart.
import fs from 'node:fs';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../../temporal/closeSafeRetries';
import { NativeConnection } from '@temporalio/worker';
import pino from 'pino';
import { FileEscalationStore } from '../../activities/escalationStore';
import { createSessionWaker } from '../../activities/sessionSignals';
import { installQuietRuntime } from '../../devkit/temporal';
import { openLockService } from '../../locks/openLockService';
import { createLockwardenWorker } from '../../worker/createWorker';
import { countEveryCall } from './countingLocks';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`scale worker: ${name} is not set`);
  return value;
};

async function main(): Promise<void> {
  installQuietRuntime();
  const address = env('TEMPORAL_ADDRESS');
  const log = pino({ level: 'silent' });
  const { service: locks, counts } = countEveryCall(
    await openLockService(env('LOCK_SERVICE_URL'), { maxTtlMs: 600_000 }),
  );
  const connection = await NativeConnection.connect({ address });
  const client = new Client({ connection: await connectTemporal({ address }) });
  const worker = await createLockwardenWorker({
    connection,
    namespace: 'default',
    taskQueue: env('SCALE_TASK_QUEUE'),
    ...(process.env.SCALE_MAX_CACHED ? { maxCachedWorkflows: Number(process.env.SCALE_MAX_CACHED) } : {}),
    workflows: { workflowBundle: { codePath: env('SCALE_BUNDLE') } },
    deps: {
      locks,
      log,
      escalations: new FileEscalationStore(env('SCALE_ESCALATIONS')),
      waker: createSessionWaker(client, log),
    },
  });
  const file = env('SCALE_COUNTS');
  const report = setInterval(() => fs.writeFileSync(file, JSON.stringify(counts)), 1_000);
  process.once('SIGTERM', () => worker.shutdown());
  try {
    await worker.run();
  } finally {
    clearInterval(report);
    await locks.close();
    await connection.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
