// The PostgreSQL backend's schema, as migrations the backend applies once each, in order.
import type { Pool } from 'pg';

// Each entry is applied once, in order, and recorded; never edit one that has shipped, add another.
const MIGRATIONS: string[] = [
  `CREATE TABLE lockwarden_leases (
     key text PRIMARY KEY,
     last_token bigint NOT NULL,
     holder text, token bigint, ttl_ms integer, lease_until_ms bigint, granted_at_ms bigint);
   CREATE SEQUENCE lockwarden_waiter_seq;
   CREATE TABLE lockwarden_waiters (
     key text NOT NULL, requester text NOT NULL, priority integer NOT NULL, seq bigint NOT NULL,
     expires_at_ms bigint NOT NULL, PRIMARY KEY (key, requester));
   CREATE TABLE lockwarden_fenced_resources (
     resource text PRIMARY KEY, newest_token numeric NOT NULL);`,
  // Every fenced write attempt, accepted or refused, for the post-mortem briefing's timeline.
  `CREATE TABLE lockwarden_fenced_writes (
     id bigserial PRIMARY KEY, resource text NOT NULL, token numeric NOT NULL,
     accepted boolean NOT NULL, newest_token numeric NOT NULL, at_ms bigint NOT NULL);
   CREATE INDEX lockwarden_fenced_writes_resource ON lockwarden_fenced_writes (resource, id);`,
  // When each waiter first took its place, for `lockctl status` (older tickets have none).
  `ALTER TABLE lockwarden_waiters ADD COLUMN since_ms bigint;`,
  // The thread of control a ticket waits for and a lease is held for, for the wait-for graph.
  `ALTER TABLE lockwarden_waiters ADD COLUMN owner text;
   ALTER TABLE lockwarden_leases ADD COLUMN owner text;`,
  // Tokens from one sequence (CACHE 1: values rise in the order they are drawn, across sessions),
  // started above every key's counter, so a key's row can go once the key is idle. A row's
  // lease_until_ms is when its lease ends or ended; the indexes serve the sweeps and the forgetting.
  `CREATE SEQUENCE lockwarden_token_seq CACHE 1;
   SELECT setval('lockwarden_token_seq', GREATEST(1, (SELECT COALESCE(MAX(last_token), 0) FROM lockwarden_leases)),
     (SELECT COALESCE(MAX(last_token), 0) FROM lockwarden_leases) > 0);
   UPDATE lockwarden_leases SET lease_until_ms = (extract(epoch from clock_timestamp()) * 1000)::bigint
     WHERE lease_until_ms IS NULL;
   CREATE INDEX lockwarden_leases_until ON lockwarden_leases (lease_until_ms);
   CREATE INDEX lockwarden_waiters_expiry ON lockwarden_waiters (expires_at_ms);`,
  // The keys a requester holds or waits for, counted against its limit (maxKeysPerRequester).
  `CREATE INDEX lockwarden_waiters_requester ON lockwarden_waiters (requester, expires_at_ms);
   CREATE INDEX lockwarden_leases_holder ON lockwarden_leases (holder, lease_until_ms);`,
];

// An arbitrary constant: the advisory lock that serializes migrations across concurrent workers.
const MIGRATION_LOCK_ID = 0x10c4_3a7d;

/**
 * Brings the lockwarden schema up to date (or, for a test of an upgrade, up to migration `upTo`, as
 * an older release left it); safe to run from several processes at once.
 */
export async function migratePostgres(pool: Pool, upTo: number = MIGRATIONS.length): Promise<void> {
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    await db.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    await db.query('CREATE TABLE IF NOT EXISTS lockwarden_schema_migrations (version integer PRIMARY KEY)');
    const applied = await db.query<{ version: number }>('SELECT version FROM lockwarden_schema_migrations');
    const done = new Set(applied.rows.map((r) => r.version));
    for (const [index, sql] of MIGRATIONS.slice(0, upTo).entries()) {
      if (done.has(index + 1)) continue;
      await db.query(sql);
      await db.query('INSERT INTO lockwarden_schema_migrations (version) VALUES ($1)', [index + 1]);
    }
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    db.release();
  }
}
