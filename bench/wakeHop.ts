// The wake-up's message, measured: a parked waiter (bench/floorWorkflows.ts floorParked, its caller's
// wait pending) woken by a signal or by an update, from the message sent to the caller's wait answered,
// and how long the sender waits for its own call to return (a release activity that sends it waits
// that long before the holder's release is answered). Interleaved, one run, the project's dev server.
//   npx tsx bench/wakeHop.ts [samples]
import { setTimeout as delay } from 'node:timers/promises';
import { WorkflowUpdateStage } from '@temporalio/client';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { connectTestEnv, installQuietRuntime, quietBundlerLogger } from '../devkit/temporal';
import { unique } from '../devkit/tempFiles';
import { floorGo, floorReady, floorWake } from './floorWorkflows';
import { percentile } from './stats';

const SAMPLES = Number(process.argv[2] ?? 40);

async function main(): Promise<void> {
  installQuietRuntime();
  const env = await connectTestEnv();
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./benchWorkflows'),
    logger: quietBundlerLogger,
  });
  const taskQueue = unique('wake');
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    activities: { noop: async () => undefined },
  });
  const seen = { signal: [] as number[], update: [] as number[] };
  const sender = { signal: [] as number[], update: [] as number[] };
  await worker.runUntil(async () => {
    for (let i = 0; i < SAMPLES; i++) {
      for (const how of ['signal', 'update'] as const) {
        const handle = await env.client.workflow.start('floorParked', {
          taskQueue,
          workflowId: unique('parked'),
        });
        const wait = await handle.startUpdate(floorReady, { waitForStage: WorkflowUpdateStage.ACCEPTED });
        await delay(30);
        const sent = performance.now();
        await (how === 'signal' ? handle.signal(floorGo) : handle.executeUpdate(floorWake));
        sender[how].push(performance.now() - sent);
        await wait.result();
        seen[how].push(performance.now() - sent);
        await handle.result();
      }
    }
  });
  await env.teardown();
  const row = (how: 'signal' | 'update') =>
    `${how}: wait answered p50 ${percentile(seen[how], 50).toFixed(1)} ms (p99 ${percentile(seen[how], 99).toFixed(1)}), ` +
    `sender's call returned p50 ${percentile(sender[how], 50).toFixed(1)} ms`;
  console.log(`wake-up of a parked waiter, ${SAMPLES} samples each`);
  console.log(row('signal'));
  console.log(row('update'));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
