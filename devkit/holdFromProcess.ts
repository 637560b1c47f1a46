// Run as a process of its own by the holder-liveness tests and bench/holderDeath.ts: acquires a key through the client, as a
// service would, prints the lease as one JSON line, and holds it (keeping it alive) until killed.
import { Client } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { acquire } from '../client/lockwardenClient';
import { TEMPORAL_ADDRESS } from './temporal';

async function main(): Promise<void> {
  const [key, requester, taskQueue, holderTtlMs] = process.argv.slice(2);
  const client = new Client({ connection: await connectTemporal({ address: TEMPORAL_ADDRESS }) });
  const { lease } = await acquire(
    client,
    { key: key!, requester: requester!, holderTtlMs: Number(holderTtlMs) },
    { taskQueue: taskQueue! },
  );
  console.log(JSON.stringify(lease));
  // The keep-alives do not keep a process alive; a service's own work would.
  setInterval(() => undefined, 1 << 30);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
