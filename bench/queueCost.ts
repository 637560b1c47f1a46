// What one lock-service call costs when queues are long, per backend: the calls a session makes on a
// key whose queue holds many tickets, against the same calls on a key with an empty queue, in the
// same run and on the same connection.
//   npx tsx bench/queueCost.ts [--samples 200]
// Layouts: one key with 1,000 waiters; 1,000 keys with 10 waiters each (10,000 tickets in all).
// Calls timed on a key of the layout: a tail waiter's ticket refresh (a denied tryAcquire), the
// holder's renewal, a position read, and a hand-off (release, then the head's granted tryAcquire,
// then the new holder's release and the old head's return to the tail, so the queue keeps its size).
// The wait-for reads (holdings and waits) read every key: they run when a waiter's situation
// changes, not on every wake, and are timed too; so are the sweep's stalledQueues() and
// leasesRunningLow(), which each worker makes every few seconds.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { mapConcurrently } from '../client/concurrency';
import { SERVER_URLS } from '../devkit/servers';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import type { LockService } from '../locks/lockService';
import { SILENT_LEASE_FRACTION } from '../policy/decisions/leaseKeeping';
import { openLockService } from '../locks/openLockService';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { SESSION_QUEUE_TICKET_MS } from '../policy/lockContract/lockSchemas';
import { wholeNumber } from './cliArgs';
import { median, percentile } from './stats';

const options = new Command('queue-cost')
  .option('--samples <n>', 'timed calls of each kind per layout', wholeNumber(1), 200)
  .parse()
  .opts<{ samples: number }>();

// Long enough that every key is still held when its layout's reads are timed: a layout of 10,000
// tickets takes a minute or more to set up on the slower backends, and a lease that lapsed there
// would turn "the sweep, every key held" into a read of every free key's queue.
const TTL_MS = 600_000;
const LAYOUTS = [
  { name: '1 key × 1,000 waiters', keys: 1, waitersPerKey: 1_000 },
  { name: '1,000 keys × 10 waiters', keys: 1_000, waitersPerKey: 10 },
] as const;

interface Timing {
  p50: number;
  p99: number;
}

async function timed(times: number, op: (i: number) => Promise<unknown>): Promise<Timing> {
  for (let i = 0; i < Math.min(20, times); i++) await op(i);
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await op(i);
    samples.push(performance.now() - start);
  }
  return { p50: median(samples), p99: percentile(samples, 99) };
}

const ticket = (key: string, requester: string) => ({
  key,
  requester,
  ttlMs: TTL_MS,
  queueTicketMs: SESSION_QUEUE_TICKET_MS,
});

async function leaseOf(locks: LockService, key: string, requester: string): Promise<Lease> {
  const attempt = await locks.tryAcquire(ticket(key, requester));
  if (!attempt.granted) throw new Error(`${requester} was not granted ${key}: ${attempt.denial.code}`);
  return attempt.lease;
}

/** Times the calls on `key`, whose holder is `holder` and whose queue is `waiters` (kept in order). */
async function timeKey(locks: LockService, key: string, holder: Lease, waiters: string[]) {
  const samples = options.samples;
  const tail = waiters[waiters.length - 1]!;
  const refresh = await timed(samples, () => locks.tryAcquire(ticket(key, tail)));
  const renew = await timed(samples, () => locks.renew(holder));
  const position = await timed(samples, () => locks.position({ key, requester: tail }));
  let current = holder;
  const queue = [...waiters];
  const handoff = await timed(samples, async () => {
    const previous = current.holder;
    const released = await locks.release(current);
    if (!released.ok) throw new Error(`release refused: ${released.reason}`);
    current = await leaseOf(locks, key, queue.shift()!);
    // The old holder goes back to the tail, so the queue keeps its length.
    const back = await locks.tryAcquire(ticket(key, previous));
    if (back.granted) throw new Error('a requester at the tail was granted a held key');
    queue.push(previous);
  });
  return { refresh, renew, position, handoff, current };
}

async function measureBackend(backend: string, url: string) {
  const locks = await openLockService(url, { maxTtlMs: 600_000 });
  try {
    // What a worker's sweep keeps doing: keys idle past the retention (an earlier run's) are
    // forgotten first, so the all-keys reads cost what the keys in use need, as in a running system.
    while ((await locks.forgetIdleKeys()) > 0);
    // The baseline: the same calls on a key with a holder and one waiter.
    const baseKey = unique('qc-base');
    const baseHolder = await leaseOf(locks, baseKey, 'holder');
    await locks.tryAcquire(ticket(baseKey, 'w0'));
    const base = await timeKey(locks, baseKey, baseHolder, ['w0']);
    await locks.release(base.current);
    const rows = [];
    for (const layout of LAYOUTS) {
      const run = unique('qc');
      const keys = Array.from({ length: layout.keys }, (_, k) => `${run}-k${k}`);
      const holders = new Map<string, Lease>();
      const setupStart = performance.now();
      await mapConcurrently(keys, 20, async (key) => {
        holders.set(key, await leaseOf(locks, key, 'holder'));
        for (let w = 0; w < layout.waitersPerKey; w++) await locks.tryAcquire(ticket(key, `w${w}`));
      });
      const setupS = (performance.now() - setupStart) / 1000;
      const key = keys[Math.floor(keys.length / 2)]!;
      const waiters = Array.from({ length: layout.waitersPerKey }, (_, w) => `w${w}`);
      const timing = await timeKey(locks, key, holders.get(key)!, waiters);
      holders.set(key, timing.current);
      const holdings = await timed(Math.min(options.samples, 50), () => locks.holdings());
      const waits = await timed(Math.min(options.samples, 50), () => locks.waits());
      // The queue sweep's one call, every key held: what each worker pays every sweep.
      const stalled = await timed(Math.min(options.samples, 50), () => locks.stalledQueues());
      // Its other call: the leases whose keepers fell silent (none here: all were just granted).
      const silent = await timed(Math.min(options.samples, 50), () =>
        locks.leasesRunningLow(SILENT_LEASE_FRACTION),
      );
      rows.push({ layout: layout.name, setupS, ...timing, holdings, waits, stalled, silent });
      await mapConcurrently([...holders.values()], 20, (lease) => locks.release(lease));
      const everyone = ['holder', ...waiters];
      await mapConcurrently(keys, 20, async (k) => {
        for (const requester of everyone) await locks.leave({ key: k, requester });
      });
    }
    return { backend, base, rows };
  } finally {
    await locks.close();
  }
}

const ms = (t: Timing) => `${t.p50.toFixed(2)} / ${t.p99.toFixed(2)}`;

async function main(): Promise<void> {
  execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'lock-servers.sh'), 'start'], {
    stdio: 'ignore',
  });
  const urls: Record<string, string> = { sqlite: `sqlite:${freshSqlitePath()}`, ...SERVER_URLS };
  const lines = [
    `queue cost per call, ms p50 / p99, ${options.samples} samples each, ${new Date().toISOString()}`,
    '',
    '| backend | layout | ticket refresh | renew | position | hand-off (release + grant + re-queue) | holdings (all keys) | waits (all keys) | stalled queues (the sweep) | silent leases (the sweep) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  console.log(lines.join('\n'));
  for (const backend of ['sqlite', 'redis', 'postgres', 'etcd', 'zookeeper']) {
    const result = await measureBackend(backend, urls[backend]!);
    const b = result.base;
    const baseLine = `| ${backend} | 1 key × 1 waiter (baseline) | ${ms(b.refresh)} | ${ms(b.renew)} | ${ms(b.position)} | ${ms(b.handoff)} | – | – | – | – |`;
    console.log(baseLine);
    lines.push(baseLine);
    for (const r of result.rows) {
      const line = `| ${backend} | ${r.layout} | ${ms(r.refresh)} | ${ms(r.renew)} | ${ms(r.position)} | ${ms(r.handoff)} | ${ms(r.holdings)} | ${ms(r.waits)} | ${ms(r.stalled)} | ${ms(r.silent)} |`;
      console.log(line);
      lines.push(line);
    }
  }
  const out = path.join(__dirname, 'results', 'queue-cost.md');
  fs.writeFileSync(out, [...lines, ''].join('\n'));
  console.log(`written to ${path.relative(process.cwd(), out)}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
