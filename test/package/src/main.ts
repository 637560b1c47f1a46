// The user's own code outside a workflow: acquire and release, withLease, and a workflow of theirs
// that takes the same lock. Prints one JSON line per lease it saw.
//   node lib/main.js <taskQueue> <key>
import { Client, Connection } from '@temporalio/client';
import { acquire, isLockNotAcquired, release, withLease } from 'lockwarden/client';
import type { nightlyExport } from './workflows';

async function main(): Promise<void> {
  const [taskQueue, key] = process.argv.slice(2) as [string, string];
  const client = new Client({
    connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' }),
  });
  try {
    const { lease } = await acquire(client, { key, requester: 'script-a' }, { taskQueue });
    console.log(JSON.stringify({ by: 'acquire', token: lease.token }));
    const released = await release(client, lease);
    console.log(JSON.stringify({ by: 'release', ok: released.ok }));

    const token = await withLease(client, { key, requester: 'script-b' }, async (held) => held.token, {
      taskQueue,
    });
    console.log(JSON.stringify({ by: 'withLease', token }));

    const result = await client.workflow.execute<typeof nightlyExport>('nightlyExport', {
      taskQueue,
      workflowId: `nightly-${key}`,
      args: [key],
    });
    console.log(JSON.stringify({ by: 'withLock', token: result.token, receipt: result.receipt }));
  } catch (error) {
    if (isLockNotAcquired(error)) console.log(JSON.stringify({ notAcquired: error.message }));
    throw error;
  } finally {
    await client.connection.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
