// A store 0.1.0 wrote (a token counter per key, every key ever used kept for ever), opened by this
// release: its tokens keep rising on every key, old and new, and its idle keys can now be forgotten.
import Database from 'better-sqlite3';
import { Pool } from 'pg';
import { createClient } from 'redis';
import { setTimeout as delay } from 'node:timers/promises';
import { migratePostgres } from '../locks/postgresMigrations';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import type { AcquireAttempt } from '../policy/lockContract/lockSchemas';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { SERVER_URLS } from './support/lockBackends';

const OLD_TOKEN = 57;
const tokenOf = (attempt: AcquireAttempt) => {
  if (!attempt.granted) throw new Error(`expected a grant, got ${attempt.denial.code}`);
  return BigInt(attempt.lease.token);
};

/**
 * What each check asks of the upgraded store: `used` (released by 0.1.0 at token 57) and a key
 * never used both get tokens above 57; `queued` (free, one live ticket, planted too) is listed as
 * stalled; and `used`, idle, is forgotten once the retention has passed.
 */
async function expectUpgraded(locks: LockService, used: string, queued: string): Promise<void> {
  expect((await locks.inspect(used)).lastToken).toBe(String(OLD_TOKEN));
  expect(await locks.stalledQueues()).toContainEqual({ key: queued, waiters: ['w'] });
  // A key never used first: its token must come from a counter that starts above 0.1.0's.
  const fresh = await locks.tryAcquire({ key: unique('never-used'), requester: 'new', ttlMs: 30_000 });
  expect(tokenOf(fresh)).toBeGreaterThan(BigInt(OLD_TOKEN));
  const again = await locks.tryAcquire({ key: used, requester: 'new', ttlMs: 30_000 });
  expect(tokenOf(again)).toBeGreaterThan(BigInt(OLD_TOKEN));
  if (again.granted) await locks.release(again.lease);
  await delay(700);
  await locks.forgetIdleKeys();
  expect((await locks.inspect(used)).lastToken).toBeNull();
  const later = await locks.tryAcquire({ key: used, requester: 'later', ttlMs: 30_000 });
  expect(tokenOf(later)).toBeGreaterThan(tokenOf(again));
}

const FUTURE = () => Date.now() + 600_000;

it('[sqlite] upgrades a 0.1.0 file: tokens rise on old and new keys, idle keys can go', async () => {
  const file = freshSqlitePath();
  const db = new Database(file);
  db.exec(`
    CREATE TABLE lock_leases (key TEXT PRIMARY KEY, last_token INTEGER NOT NULL, holder TEXT, token INTEGER,
      ttl_ms INTEGER, lease_until_ms INTEGER, granted_at_ms INTEGER, owner TEXT) STRICT;
    CREATE TABLE lock_waiters (key TEXT NOT NULL, requester TEXT NOT NULL, priority INTEGER NOT NULL,
      seq INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, since_ms INTEGER, owner TEXT,
      PRIMARY KEY (key, requester)) STRICT;`);
  db.prepare('INSERT INTO lock_leases (key, last_token) VALUES (?, ?)').run('used', OLD_TOKEN);
  db.prepare('INSERT INTO lock_leases (key, last_token) VALUES (?, 3)').run('queued');
  db.prepare('INSERT INTO lock_waiters VALUES (?, ?, 0, 1, ?, 0, NULL)').run('queued', 'w', FUTURE());
  db.close();
  const locks = await openLockService(`sqlite:${file}`, { idleKeyRetentionMs: 300 });
  try {
    await expectUpgraded(locks, 'used', 'queued');
  } finally {
    await locks.close();
  }
});

it('[postgres] upgrades a 0.1.0 database: tokens rise on old and new keys, idle keys can go', async () => {
  const database = unique('lw_upgrade')
    .replace(/[^a-z0-9_]/gi, '_')
    .toLowerCase();
  const admin = new Pool({ connectionString: SERVER_URLS.postgres, max: 1 });
  await admin.query(`CREATE DATABASE ${database}`);
  const url = SERVER_URLS.postgres.replace(/\/lockwarden$/, `/${database}`);
  const old = new Pool({ connectionString: url, max: 1 });
  let locks: LockService | undefined;
  try {
    await migratePostgres(old, 4); // the schema 0.1.0 left
    await old.query('INSERT INTO lockwarden_leases (key, last_token) VALUES ($1, $2), ($3, 3)', [
      'used',
      OLD_TOKEN,
      'queued',
    ]);
    await old.query(
      'INSERT INTO lockwarden_waiters (key, requester, priority, seq, expires_at_ms) VALUES ($1, $2, 0, 1, $3)',
      ['queued', 'w', FUTURE()],
    );
    await old.end();
    locks = await openLockService(url, { idleKeyRetentionMs: 300 });
    await expectUpgraded(locks, 'used', 'queued');
  } finally {
    await locks?.close();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
});

it('[redis] upgrades a 0.1.0 store: its set of every key ever used is gone, tokens rise, idle keys can go', async () => {
  const url = `${SERVER_URLS.redis}/7`; // a database of this test's own
  const redis = createClient({ url });
  await redis.connect();
  let locks: LockService | undefined;
  try {
    await redis.flushDb();
    await redis.sAdd('lockwarden:keys', ['used', 'queued']);
    await redis.set('lockwarden:token:used', String(OLD_TOKEN));
    await redis.set('lockwarden:token:queued', '3');
    await redis.zAdd('lockwarden:waiters:queued', { score: 1_000 * 2 ** 40 + 1, value: 'w' });
    await redis.hSet('lockwarden:waiter-exp:queued', 'w', String(FUTURE()));
    locks = await openLockService(url, { idleKeyRetentionMs: 300 });
    expect(await redis.exists('lockwarden:keys')).toBe(0);
    await expectUpgraded(locks, 'used', 'queued');
  } finally {
    await locks?.close();
    await redis.flushDb();
    await redis.quit();
  }
});
