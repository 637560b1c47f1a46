// A value under lockwarden's names that lockwarden did not write, on each real server: a typed
// CorruptLockState failure naming the key, never a lease, never an outage to be retried.
import Database from 'better-sqlite3';
import { Etcd3 } from 'etcd3';
import { Client as PgClient } from 'pg';
import { createClient } from 'redis';
import { openLockService } from '../locks/openLockService';
import { LEASE_PREFIX } from '../locks/etcdLockService';
import { CorruptLockStateError, isCorruptLockState } from '../policy/errors';
import { unique } from './support/temporalFixture';
import { SERVER_URLS } from './support/lockBackends';
import { freshSqlitePath } from '../devkit/tempFiles';

const HOSTILE_HOLDER = 'h\u001b[2J\u001b]0;pwned\u0007';
const FUTURE = Date.now() + 3_600_000;

/** Each backend with a way to plant, under its own names, a record lockwarden would never write. */
const plants: {
  backend: string;
  url: () => string;
  plant: (key: string) => Promise<void>;
  unplant: (key: string) => Promise<void>;
}[] = [];

const sqliteFile = freshSqlitePath();
plants.push({
  backend: 'sqlite',
  url: () => `sqlite:${sqliteFile}`,
  async plant(key) {
    const db = new Database(sqliteFile);
    db.prepare(
      'INSERT INTO lock_leases (key, last_token, holder, token, ttl_ms, lease_until_ms, granted_at_ms) VALUES (?, 1, ?, 1, 30000, ?, 0)',
    ).run(key, HOSTILE_HOLDER, FUTURE);
    db.close();
  },
  async unplant(key) {
    const db = new Database(sqliteFile);
    db.prepare('DELETE FROM lock_leases WHERE key = ?').run(key);
    db.close();
  },
});
plants.push({
  backend: 'redis',
  url: () => SERVER_URLS.redis,
  async plant(key) {
    const client = createClient({ url: SERVER_URLS.redis });
    await client.connect();
    // Another program's plain string where lockwarden keeps a hash.
    await client.set(`lockwarden:lease:${key}`, 'not-a-hash');
    await client.quit();
  },
  async unplant(key) {
    const client = createClient({ url: SERVER_URLS.redis });
    await client.connect();
    await client.del(`lockwarden:lease:${key}`);
    await client.quit();
  },
});
plants.push({
  backend: 'postgres',
  url: () => SERVER_URLS.postgres,
  async plant(key) {
    const client = new PgClient({ connectionString: SERVER_URLS.postgres });
    await client.connect();
    await client.query(
      'INSERT INTO lockwarden_leases (key, last_token, holder, token, ttl_ms, lease_until_ms, granted_at_ms) VALUES ($1, 1, $2, 1, 30000, $3, 0)',
      [key, HOSTILE_HOLDER, FUTURE],
    );
    await client.end();
  },
  async unplant(key) {
    const client = new PgClient({ connectionString: SERVER_URLS.postgres });
    await client.connect();
    await client.query('DELETE FROM lockwarden_leases WHERE key = $1', [key]);
    await client.end();
  },
});
plants.push({
  backend: 'etcd',
  url: () => SERVER_URLS.etcd,
  async plant(key) {
    const client = new Etcd3({ hosts: SERVER_URLS.etcd.replace('etcd://', 'http://') });
    await client.put(`${LEASE_PREFIX}${encodeURIComponent(key)}`).value('not json');
    client.close();
  },
  async unplant(key) {
    const client = new Etcd3({ hosts: SERVER_URLS.etcd.replace('etcd://', 'http://') });
    await client.delete().key(`${LEASE_PREFIX}${encodeURIComponent(key)}`);
    client.close();
  },
});

describe.each(plants)('a record lockwarden did not write on $backend', ({ backend, url, plant, unplant }) => {
  it('is refused as CorruptLockState naming the key at every read of it, and left out of every list', async () => {
    const reported: string[] = [];
    const onCorrupt = (error: CorruptLockStateError) => reported.push(error.key);
    const locks = await openLockService(url(), { maxTtlMs: 60_000, onCorrupt });
    const key = unique(`corrupt-${backend}`);
    try {
      // The service creates its tables on open; the planted record goes in beside lockwarden's.
      await locks.inspect(unique('warm-up'));
      await plant(key);
      const reads = [
        () => locks.inspect(key),
        () => locks.tryAcquire({ key, requester: 'someone', ttlMs: 5_000 }),
      ];
      for (const read of reads) {
        const failure = await read().catch((error: unknown) => error);
        expect(isCorruptLockState(failure)).toBe(true);
        expect(failure).toBeInstanceOf(CorruptLockStateError);
        expect((failure as CorruptLockStateError).key).toBe(key);
      }
      // A key nobody tampered with is served as ever, and the lists go on without the bad record.
      const clean = unique('clean');
      expect(await locks.tryAcquire({ key: clean, requester: 'someone', ttlMs: 5_000 })).toMatchObject({
        granted: true,
      });
      const held = (await locks.holdings()).map((h) => h.key);
      expect(held).toContain(clean);
      expect(held).not.toContain(key);
      expect((await locks.leasesRunningLow(1)).map((l) => l.key)).not.toContain(key);
      // The SQL backends list it and the check leaves it out (reported); etcd and Redis skip it.
      if (backend === 'sqlite' || backend === 'postgres') expect(reported).toContain(key);
      await locks.release({ key: clean, holder: 'someone', token: (await locks.inspect(clean)).token! });
    } finally {
      await unplant(key);
      await locks.close();
    }
  });
});

describe('a Redis lease whose token is not a token', () => {
  it('is never handed to its holder as a lease', async () => {
    const locks = await openLockService(SERVER_URLS.redis, { maxTtlMs: 60_000 });
    const client = createClient({ url: SERVER_URLS.redis });
    await client.connect();
    const key = unique('not-a-token');
    try {
      await client.hSet(`lockwarden:lease:${key}`, {
        holder: 'me',
        token: 'not-a-token',
        ttl: '30000',
        until: String(FUTURE),
        granted: '0',
        owner: '',
      });
      await expect(locks.tryAcquire({ key, requester: 'me', ttlMs: 5_000 })).rejects.toThrow(
        CorruptLockStateError,
      );
    } finally {
      await client.del(`lockwarden:lease:${key}`);
      await client.quit();
      await locks.close();
    }
  });
});
