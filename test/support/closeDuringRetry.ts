// Run as a process of its own by test/closeSafeRetries.test.ts: connects to the dev server through a
// link, takes the link away so that a call fails and is retried, closes the connection while the
// call waits for its next try, and prints how the call ended and how a call made after the close
// ends (`guarded`: through connectTemporal).
import { setTimeout as delay } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { FaultyLink } from '../../campaign/faultyLink';
import { TEMPORAL_ADDRESS } from '../../devkit/temporal';
import { connectTemporal } from '../../temporal/closeSafeRetries';

async function main(): Promise<void> {
  const [host, port] = TEMPORAL_ADDRESS.split(':');
  const link = new FaultyLink({ host: host!, port: Number(port) }, 0);
  await link.start();
  const options = { address: link.address };
  const connection =
    process.argv[2] === 'guarded' ? await connectTemporal(options) : await Connection.connect(options);
  // The server is gone: the call fails as UNAVAILABLE and the client retries it, backing off.
  await link.close();
  const call = connection.workflowService.getSystemInfo({}).then(
    () => 'answered',
    (error: unknown) => `rejected: ${String(error)}`,
  );
  await delay(1_000);
  await connection.close();
  // Longer than the retry interceptor's longest back-off (5 s): a retry due after the close has run.
  const outcome = await Promise.race([call, delay(7_000).then(() => 'unsettled')]);
  // A call made after the close, which a closed channel refuses at once.
  const afterClose = await connection.workflowService.getSystemInfo({}).then(
    () => 'answered',
    (error: unknown) => `rejected: ${String(error)}`,
  );
  await delay(500);
  console.log(JSON.stringify({ outcome, afterClose }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
