// Run as a process of its own by tests that freeze or kill a user's worker: the user's workflows
// (test/support/userWorkflows) with lockwarden's through the plugin, on an SQLite lock file.
//   node --import tsx pluginWorkerProcess.ts <taskQueue> <lockFile>
// LOCKWARDEN_ISOLATE_TIMEOUT_MS, when set, is the plugin's activation time limit. Prints "ready"
// once it polls.
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import pino from 'pino';
import { openLockService } from '../../locks/openLockService';
import { LockwardenPlugin } from '../../worker/lockwardenPlugin';
import { DEFAULT_TEMPORAL_ADDRESS } from '../../policy/constants';

async function main(): Promise<void> {
  const [taskQueue, lockFile] = process.argv.slice(2);
  const address = process.env.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const locks = await openLockService(`sqlite:${lockFile}`);
  const connection = await NativeConnection.connect({ address });
  const client = new Client({ connection: await Connection.connect({ address }) });
  const timeout = process.env.LOCKWARDEN_ISOLATE_TIMEOUT_MS;
  const worker = await Worker.create({
    connection,
    taskQueue: taskQueue!,
    workflowsPath: path.join(__dirname, 'userWorkflows'),
    activities: { exportBatch: async () => 'receipt' },
    plugins: [
      new LockwardenPlugin({
        locks,
        client,
        log: pino({ level: 'silent' }),
        ...(timeout ? { isolateExecutionTimeoutMs: Number(timeout) } : {}),
      }),
    ],
  });
  process.once('SIGTERM', () => worker.shutdown());
  console.log('ready');
  try {
    await worker.run();
  } finally {
    await locks.close();
    await connection.close();
    await client.connection.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
