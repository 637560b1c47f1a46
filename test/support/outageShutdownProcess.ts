// Run as a process of its own by test/sdkPanics.workflow.test.ts: a lock worker shut down in the
// middle of a lock service outage, and the process kept alive past a local activity attempt's bound,
// so that whatever the SDK's core does on its runtime after the worker is gone is printed here.
//   node --import tsx outageShutdownProcess.ts <postgres port>
// Prints "attempts <n>" (the session's attempts the worker made before it was shut down), then "done".
import { setTimeout as delay } from 'node:timers/promises';
import { FaultyLink } from '../../campaign/faultyLink';
import { startAcquisition, stateOf } from '../../client/lockwardenClient';
import { connectTestEnv, installQuietRuntime, silentLog, withWorker } from '../../devkit/temporal';
import { openLockService } from '../../locks/openLockService';
import { LOCAL_ATTEMPT_TIMEOUT_MS } from '../../policy/constants';
import { unique } from '../../devkit/tempFiles';

async function main(): Promise<void> {
  const pgPort = Number(process.argv[2]);
  installQuietRuntime();
  const env = await connectTestEnv();
  // The lock service through a link this process owns: closed, every connection is refused at once.
  const link = new FaultyLink({ host: '127.0.0.1', port: pgPort }, 0);
  await link.start();
  const locks = await openLockService(`postgres://lockwarden@127.0.0.1:${link.port}/lockwarden`);
  await link.close();
  let attempts = 0;
  await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
    const session = await startAcquisition(
      env.client,
      { key: unique('outage-shutdown'), requester: 'waiter' },
      { taskQueue },
    );
    // The first attempt's local activity fails at once and is retried in the worker (0.2 s, 0.4 s,
    // 0.8 s, 1.6 s apart); the worker shuts down while its next attempts are still to come.
    await delay(2_500);
    attempts = (await stateOf(env.client, session.workflowId)).attempts;
  });
  // The worker is gone; its runtime is not. A timer the core left running fires in this time.
  await delay(LOCAL_ATTEMPT_TIMEOUT_MS + 2_000);
  console.log(`attempts ${attempts}`);
  await locks.close();
  await env.teardown();
  console.log('done');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
