// Would a grant made inside the release pay? It would take one step off the hand-off's critical
// path: the woken head's own tryAcquire (the call that grants it the lease). Everything else stays:
// the release, the wake-up, the head's workflow task, the answer to its caller. This bench times,
// in one run per backend, the client-observed hand-off (release() called → the next acquire()
// answered) and the head's granting call inside it, and prints the share that call is of the whole.
//   npx tsx bench/grantInRelease.ts [hand-offs per backend]
import { setTimeout as delay } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { acquire, awaitLeaseOf, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { SERVER_URLS } from '../devkit/servers';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { onProjectServer, silentLog, withWorker } from '../devkit/temporal';
import { percentile } from './stats';

const HANDOFFS = Number(process.argv[2] ?? 100);
const BACKENDS = ['sqlite', 'redis', 'postgres', 'etcd'] as const;

// The lock service, with every granting tryAcquire timed as the worker's activity makes it.
function timingGrants(locks: LockService, grants: number[]): LockService {
  return new Proxy(locks, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (name !== 'tryAcquire' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const started = performance.now();
        const answer = await (value as (...a: unknown[]) => Promise<{ granted: boolean }>).apply(
          target,
          args,
        );
        if (answer.granted) grants.push(performance.now() - started);
        return answer;
      };
    },
  });
}

async function main(): Promise<void> {
  const { env, close } = await onProjectServer();
  const lines: string[] = [];
  try {
    for (const backend of BACKENDS) {
      const url = backend === 'sqlite' ? `sqlite:${freshSqlitePath()}` : SERVER_URLS[backend];
      const opened = await openLockService(url, { maxTtlMs: 60_000 });
      const grants: number[] = [];
      const seen: number[] = [];
      try {
        await withWorker(env, { locks: timingGrants(opened, grants), log: silentLog }, async (taskQueue) => {
          const key = unique(`gir-${backend}`);
          let holder: Lease = (await acquire(env.client, { key, requester: unique('r') }, { taskQueue }))
            .lease;
          for (let i = 0; i < HANDOFFS; i++) {
            const waiter = await startAcquisition(env.client, { key, requester: unique('r') }, { taskQueue });
            while ((await stateOf(env.client, waiter.workflowId)).phase !== 'queued') await delay(20);
            const before = grants.length;
            const started = performance.now();
            const released = await release(env.client, holder);
            if (!released.ok) throw new Error(`release refused: ${released.reason}`);
            const answer = await awaitLeaseOf(env.client, waiter.workflowId);
            if (answer.status !== 'acquired') throw new Error(`waiter ended: ${answer.outcome.status}`);
            seen.push(performance.now() - started);
            // The head's granting call: the one grant made during this hand-off.
            if (grants.length !== before + 1)
              throw new Error(`expected one grant in a hand-off, saw ${grants.length - before}`);
            holder = answer.lease;
          }
          await release(env.client, holder);
        });
      } finally {
        await opened.close();
      }
      const byValue = (s: number[]) => [...s].sort((a, b) => a - b);
      const handoff = percentile(byValue(seen), 50);
      const call = percentile(byValue(grants.slice(1)), 50);
      lines.push(
        `| ${backend} | ${handoff.toFixed(1)} ms | ${call.toFixed(2)} ms | ${((call / handoff) * 100).toFixed(1)} % | ${(handoff - call).toFixed(1)} ms |`,
      );
    }
  } finally {
    await close();
  }
  console.log(
    `grant in the release, what it could save: ${HANDOFFS} hand-offs per backend, one key, a parked head`,
  );
  console.log('');
  console.log(
    "| backend | hand-off p50, client-observed | the head's granting call p50 | share | hand-off without it |",
  );
  console.log('| --- | --- | --- | --- | --- |');
  for (const line of lines) console.log(line);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
