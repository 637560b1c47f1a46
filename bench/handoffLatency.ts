// Handoff latency: from the holder's release to the next waiter holding the lease, both read on the
// lock service's clock (the release's service time and the next lease's grant time), with
// wake-on-release and without it (the waiter then finds the lock free at its next back-off timer).
// Same worker, same back-off budget, same run.
//   npx tsx bench/handoffLatency.ts [handoffs per mode]
import { setTimeout as delay } from 'node:timers/promises';
import { acquire, awaitLeaseOf, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { unique } from '../devkit/tempFiles';
import { onProjectServer, silentLog, withWorker } from '../devkit/temporal';
import { percentile } from './stats';

const HANDOFFS = Number(process.argv[2] ?? 200);
// One chain at a time: parallel chains (and polling their state) load the two cores and blur the figure.
const KEYS = 1;
const BUDGET = { baseBackoffMs: 100, maxBackoffMs: 1_000, maxRetries: 1_000, maxTotalWaitMs: 600_000 };

async function main(): Promise<void> {
  const { env, locks, close } = await onProjectServer();
  const results: Record<string, number[]> = {};
  try {
    await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
      for (const wakeOnRelease of [true, false]) {
        const samples: number[] = [];
        await Promise.all(
          Array.from({ length: KEYS }, async () => {
            const key = unique('handoff');
            let holder: Lease = (
              await acquire(
                env.client,
                { key, requester: unique('r'), budget: BUDGET, wakeOnRelease },
                { taskQueue },
              )
            ).lease;
            for (let i = 0; i < HANDOFFS / KEYS; i++) {
              const waiter = await startAcquisition(
                env.client,
                { key, requester: unique('r'), budget: BUDGET, wakeOnRelease },
                { taskQueue },
              );
              const waiting = ['queued', 'backing-off'];
              while (!waiting.includes((await stateOf(env.client, waiter.workflowId)).phase)) await delay(50);
              await delay(Math.random() * 100); // release at a random point of the waiter's back-off
              const released = await release(env.client, holder);
              if (!released.ok) throw new Error(`release refused: ${released.reason}`);
              const answer = await awaitLeaseOf(env.client, waiter.workflowId);
              if (answer.status !== 'acquired') throw new Error(`waiter ended: ${answer.outcome.status}`);
              samples.push(answer.lease.grantedAt - released.serviceTime);
              holder = answer.lease;
            }
            await release(env.client, holder);
          }),
        );
        results[wakeOnRelease ? 'with wake-on-release' : 'without (back-off timer only)'] = samples.sort(
          (a, b) => a - b,
        );
      }
    });
  } finally {
    await close();
  }
  const rows = Object.entries(results);
  const baseline = rows[1]![1];
  console.log(
    `handoff latency, release to next holder on the lock service clock, ${HANDOFFS} handoffs per mode, back-off 100..1000 ms:`,
  );
  for (const [mode, s] of rows) {
    console.log(
      `  ${mode.padEnd(32)} p50 ${String(percentile(s, 50)).padStart(5)} ms   p99 ${String(percentile(s, 99)).padStart(5)} ms   (p50 ${(percentile(s, 50) / percentile(baseline, 50)).toFixed(2)}x of without)`,
    );
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
