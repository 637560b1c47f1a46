// What update-with-start saves on an uncontended acquire: acquire() (the session and its wait in one
// call) against a start followed by a separate awaitLease update (acquire() before it), interleaved
// in one run on the project's dev server, each followed by its release.
//   npx tsx bench/acquireWithStart.ts [samples]
import { acquire, awaitLeaseOf, release, startAcquisition } from '../client/lockwardenClient';
import { onProjectServer, silentLog, withWorker } from '../devkit/temporal';
import { unique } from '../devkit/tempFiles';
import { percentile, timeOnce } from './stats';

const SAMPLES = Number(process.argv[2] ?? 60);

async function main(): Promise<void> {
  const { env, locks, close } = await onProjectServer();
  const together: number[] = [];
  const apart: number[] = [];
  try {
    await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
      for (let i = 0; i < SAMPLES; i++) {
        together.push(
          await timeOnce(async () => {
            const { lease } = await acquire(env.client, { key: unique('ws'), requester: 'r' }, { taskQueue });
            await release(env.client, lease);
          }),
        );
        apart.push(
          await timeOnce(async () => {
            const session = await startAcquisition(
              env.client,
              { key: unique('ws'), requester: 'r' },
              { taskQueue },
            );
            const answer = await awaitLeaseOf(env.client, session.workflowId);
            if (answer.status !== 'acquired') throw new Error(`not acquired: ${answer.status}`);
            await release(env.client, answer.lease);
          }),
        );
      }
    });
  } finally {
    await close();
  }
  const [a, b] = [percentile(together, 50), percentile(apart, 50)];
  console.log(
    `acquire + release p50, ${SAMPLES} samples each: update-with-start ${a.toFixed(1)} ms, start then update ${b.toFixed(1)} ms (${(a / b).toFixed(2)}×)`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
