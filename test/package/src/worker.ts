// The user's worker, with lockwarden added through its plugin.
//   node lib/worker.js <taskQueue> <lockServiceUrl>     (prints "ready" once it polls)
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { LockwardenPlugin, openLockService } from 'lockwarden/worker';
import * as activities from './activities';

async function main(): Promise<void> {
  const [taskQueue, lockServiceUrl] = process.argv.slice(2);
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const locks = await openLockService(lockServiceUrl!);
  const client = new Client({ connection: await Connection.connect({ address }) });
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    taskQueue: taskQueue!,
    workflowsPath: require.resolve('./workflows'),
    activities,
    plugins: [new LockwardenPlugin({ locks, client })],
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
