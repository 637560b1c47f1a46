// One sweep's lock-service reads after 10^3, 10^4 and 10^5 keys used once, before and after the
// service forgets them, per backend: `npx tsx bench/soak.ts --sweep-cost [--backends ...]`.
// A live set stays all along (100 held keys, 100 queued tickets on a free key's queue), so the
// sweep has its real work; the keys used once are what must not cost it. "Kept" is the sweep while
// they are all still stored (within the retention, as 0.1.0 kept them for ever); "forgotten" is
// after forgetIdleKeys has dropped them (etcd: after their leases ran out).
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freshSqlitePath } from '../devkit/tempFiles';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import { SILENT_LEASE_FRACTION } from '../policy/decisions/leaseKeeping';
import { type Backend, lockUrlOf, storageOf } from './soakStorage';
import { median } from './stats';

const SIZES = [1_000, 10_000, 100_000];
const RETENTION_MS = 2_000;

async function sweepReadsMs(locks: LockService): Promise<number> {
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    await locks.leasesRunningLow(SILENT_LEASE_FRACTION);
    await locks.stalledQueues();
    runs.push(performance.now() - start);
  }
  return median(runs);
}

async function useOnce(locks: LockService, from: number, to: number, run: string): Promise<void> {
  for (let i = from; i < to; i += 32)
    await Promise.all(
      Array.from({ length: Math.min(32, to - i) }, async (_, j) => {
        const attempt = await locks.tryAcquire({
          key: `${run}-once-${i + j}`,
          requester: 'once',
          ttlMs: 60_000,
        });
        if (attempt.granted) await locks.release(attempt.lease);
      }),
    );
}

async function liveSet(locks: LockService, run: string): Promise<void> {
  for (let i = 0; i < 100; i++)
    await locks.tryAcquire({ key: `${run}-held-${i}`, requester: 'h', ttlMs: 600_000 });
  const queued = `${run}-queued`;
  await locks.tryAcquire({ key: queued, requester: 'first', ttlMs: 600_000 });
  for (let i = 0; i < 100; i++)
    await locks.tryAcquire({ key: queued, requester: `w${i}`, ttlMs: 600_000, queueTicketMs: 600_000 });
}

export async function sweepCost(backends: readonly Backend[]): Promise<void> {
  const lines = [
    `Sweep cost (${new Date().toISOString()}): \`npx tsx bench/soak.ts --sweep-cost\`; one sweep's reads (leasesRunningLow + stalledQueues, median of 5) beside 100 held keys and 100 queued tickets, with N keys used once still kept, then forgotten`,
    '',
    '| backend | keys used once | sweep, kept | storage, kept | forgetting them | sweep, forgotten | storage, forgotten |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const backend of backends) {
    const url = backend === 'sqlite' ? `sqlite:${freshSqlitePath()}` : lockUrlOf(backend);
    const locks = await openLockService(url, { idleKeyRetentionMs: RETENTION_MS, maxTtlMs: 600_000 });
    const run = `sweep-cost-${Date.now()}`;
    try {
      await liveSet(locks, run);
      let used = 0;
      for (const size of SIZES) {
        await useOnce(locks, used, size, run);
        used = size;
        const kept = await sweepReadsMs(locks);
        const keptBytes = (await storageOf(backend, url)).bytes;
        await delay(RETENTION_MS + 1_500);
        const start = performance.now();
        while ((await locks.forgetIdleKeys()) > 0);
        const forgetMs = performance.now() - start;
        const forgotten = await sweepReadsMs(locks);
        const forgottenBytes = (await storageOf(backend, url)).bytes;
        const line = `| ${backend} | ${size.toLocaleString('en')} | ${kept.toFixed(2)} ms | ${kib(keptBytes)} | ${forgetMs.toFixed(0)} ms | ${forgotten.toFixed(2)} ms | ${kib(forgottenBytes)} |`;
        console.log(line);
        lines.push(line);
      }
    } finally {
      await locks.close();
    }
  }
  const md = lines.join('\n');
  console.log(`\n${md}`);
  fs.writeFileSync(path.join(__dirname, 'results', 'sweep-cost.md'), `${md}\n`);
}

function kib(bytes: number): string {
  return `${Math.round(bytes / 1024).toLocaleString('en')} KiB`;
}
