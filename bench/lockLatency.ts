// Median latency of one uncontended tryAcquire + release per backend, against each server's own
// trivial round trip measured in the same run (SQLite SELECT 1, Redis PING, PostgreSQL SELECT 1,
// etcd GET of a missing key). The ratio says what the lock protocol costs over reaching the server.
//   npx tsx bench/lockLatency.ts [iterations]
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Etcd3 } from 'etcd3';
import { Client } from 'pg';
import { createClient } from 'redis';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import { SERVER_URLS } from '../devkit/servers';
import { median, timeEach } from './stats';
import { freshSqlitePath, unique } from '../devkit/tempFiles';

const ITERATIONS = Number(process.argv[2] ?? 1_000);

// Warm-up first: connections, statement caches, JIT.
async function medianOf(iterations: number, op: () => Promise<unknown>): Promise<number> {
  return median(await timeEach(op, iterations, Math.min(50, iterations)));
}

async function acquireRelease(locks: LockService): Promise<number> {
  const key = unique('bench');
  return medianOf(ITERATIONS, async () => {
    const attempt = await locks.tryAcquire({ key, requester: 'bench', ttlMs: 30_000 });
    if (!attempt.granted) throw new Error(`bench key unexpectedly held: ${attempt.denial.code}`);
    const released = await locks.release(attempt.lease);
    if (!released.ok) throw new Error(`release refused: ${released.reason}`);
  });
}

async function main(): Promise<void> {
  execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'lock-servers.sh'), 'start'], {
    stdio: 'inherit',
  });
  const sqlitePath = freshSqlitePath();
  const rows: { backend: string; baselineMs: number; lockMs: number }[] = [];

  const sqliteDb = new Database(sqlitePath);
  const sqlitePing = sqliteDb.prepare('SELECT 1');
  const redis = await createClient({ url: SERVER_URLS.redis }).connect();
  const pg = new Client({ connectionString: SERVER_URLS.postgres });
  await pg.connect();
  const etcd = new Etcd3({ hosts: SERVER_URLS.etcd.replace('etcd://', 'http://') });
  const baselines: Record<string, () => Promise<unknown>> = {
    sqlite: async () => sqlitePing.get(),
    redis: () => redis.ping(),
    postgres: () => pg.query('SELECT 1'),
    etcd: () => etcd.get('lockwarden/bench/missing').string(),
  };
  const urls: Record<string, string> = { sqlite: `sqlite:${sqlitePath}`, ...SERVER_URLS };

  for (const backend of ['sqlite', 'redis', 'postgres', 'etcd']) {
    const baselineMs = await medianOf(ITERATIONS, baselines[backend]!);
    const locks = await openLockService(urls[backend]!);
    const lockMs = await acquireRelease(locks);
    await locks.close();
    rows.push({ backend, baselineMs, lockMs });
  }
  sqliteDb.close();
  await redis.quit();
  await pg.end();
  etcd.close();

  console.log(`uncontended tryAcquire + release, median of ${ITERATIONS} (after 50 warm-up), this machine:`);
  console.log('backend    baseline round trip   acquire+release   ratio');
  for (const r of rows) {
    console.log(
      `${r.backend.padEnd(10)} ${r.baselineMs.toFixed(3).padStart(12)} ms   ${r.lockMs.toFixed(3).padStart(12)} ms   ${(r.lockMs / r.baselineMs).toFixed(1).padStart(6)}x`,
    );
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
