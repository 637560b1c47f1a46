// The PostgreSQL backend: one transaction per step, the key's row locked FOR UPDATE.
import type { Pool, PoolClient } from 'pg';
import {
  type AcquireAttempt,
  ABSOLUTE_MAX_TTL_MS,
  type FencedActionResult,
  fencedTargetSchema,
  type FencedTarget,
  type Holding,
  lockKeySchema,
  fractionLeftSchema,
  parseOrThrow,
  parseTryAcquire,
  type TryAcquireRequest,
  type Wait,
  waiterSchema,
  type WaiterRef,
} from '../policy/lockContract/lockSchemas';
import {
  decideGrant,
  deniedAttempt,
  engagesAfresh,
  grantedAttempt,
  ownerRefusal,
  positionsByKey,
  queueOrder,
  stalledQueuesOf,
  type Ticket,
  waitersOf,
  withinRequesterLimit,
} from './grantRules';
import type { LockRecord, LockService, LockServiceLimits, LowLease, StalledQueue } from './lockService';
import {
  DEFAULT_MAX_KEYS_PER_REQUESTER,
  DEFAULT_MAX_WAITERS_PER_KEY,
  FORGET_IDLE_BATCH,
  IDLE_KEY_RETENTION_MS,
} from '../policy/constants';
import { migratePostgres } from './postgresMigrations';
import { resilientPool } from './postgresPool';
import { untilReachable } from './untilReachable';

/** Options of the PostgreSQL backend. */
interface PostgresLockServiceOptions extends LockServiceLimits {
  /** A `postgres://` connection string. */
  connectionString: string;
  /** Connections in the pool; each compound step holds one for a short transaction. */
  poolSize?: number;
  /** How long `open` waits for a server that cannot be reached yet (DEFAULT_CONNECT_WAIT_MS). */
  connectWaitMs?: number;
}

// The service clock: the database server's wall clock at the moment of the statement.
const SERVICE_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

interface LeaseRow {
  key: string;
  last_token: string;
  holder: string | null;
  token: string | null;
  lease_until_ms: string | null;
  granted_at_ms: string | null;
  owner: string | null;
  now: string;
}

/**
 * The PostgreSQL backend. Each compound step is one transaction that locks the key's row
 * (SELECT ... FOR UPDATE), reads the server's clock, and applies the shared grant rules. Tokens come
 * from one sequence (`lockwarden_token_seq`, drawn under the key's row lock), so they survive
 * restarts and failovers that keep committed data, and a key's row can go once the key is idle
 * (forgetIdleKeys) with its next token still above every earlier one.
 */
export class PostgresLockService implements LockService {
  readonly backend = 'postgres';
  readonly minTtlMs = 1;
  private readonly maxTtlMs: number;
  private readonly idleKeyRetentionMs: number;
  private readonly maxWaitersPerKey: number;
  private readonly maxKeysPerRequester: number;
  private ready: Promise<void> | undefined;

  private constructor(
    private readonly pool: Pool,
    options: PostgresLockServiceOptions,
  ) {
    this.maxTtlMs = options.maxTtlMs ?? ABSOLUTE_MAX_TTL_MS;
    this.idleKeyRetentionMs = options.idleKeyRetentionMs ?? IDLE_KEY_RETENTION_MS;
    this.maxWaitersPerKey = options.maxWaitersPerKey ?? DEFAULT_MAX_WAITERS_PER_KEY;
    this.maxKeysPerRequester = options.maxKeysPerRequester ?? DEFAULT_MAX_KEYS_PER_REQUESTER;
  }

  /**
   * Connects and runs the schema migrations before the first operation, waiting up to
   * `connectWaitMs` for a server that is not up yet (a worker started during a restart).
   */
  static async open(options: PostgresLockServiceOptions): Promise<PostgresLockService> {
    const pool = resilientPool({ connectionString: options.connectionString, max: options.poolSize ?? 4 });
    const service = new PostgresLockService(pool, options);
    service.ready = untilReachable(() => migratePostgres(pool), options.connectWaitMs);
    try {
      await service.ready;
    } catch (error) {
      await pool.end();
      throw error;
    }
    return service;
  }

  async tryAcquire(input: TryAcquireRequest): Promise<AcquireAttempt> {
    const request = parseTryAcquire(input, this.maxTtlMs);
    return this.transaction(async (db): Promise<AcquireAttempt> => {
      const row = await this.lockRow(db, request.key);
      const now = Number(row.now);
      await db.query('DELETE FROM lockwarden_waiters WHERE key = $1 AND expires_at_ms <= $2', [
        request.key,
        now,
      ]);
      const tickets = await this.ticketsOf(db, request.key, now);
      const leaseUntil = row.lease_until_ms === null ? null : Number(row.lease_until_ms);
      let step = decideGrant(
        { now, holder: row.holder, leaseUntil, tickets, maxWaiters: this.maxWaitersPerKey },
        request,
      );
      if (
        engagesAfresh(
          step,
          tickets.some((t) => t.requester === request.requester),
        )
      ) {
        const elsewhere = await db.query<{ n: string }>(
          `SELECT (SELECT COUNT(*) FROM lockwarden_waiters
                    WHERE requester = $1 AND expires_at_ms > $3 AND key != $2)
                + (SELECT COUNT(*) FROM lockwarden_leases
                    WHERE holder = $1 AND lease_until_ms > $3 AND key != $2) AS n`,
          [request.requester, request.key, now],
        );
        step = withinRequesterLimit(step, Number(elsewhere.rows[0]!.n), this.maxKeysPerRequester);
      }
      if (step.kind === 'return-existing') {
        return {
          granted: true,
          lease: {
            key: row.key,
            holder: row.holder!,
            token: row.token!,
            leaseUntil: leaseUntil!,
            grantedAt: Number(row.granted_at_ms),
          },
        };
      }
      if (step.kind === 'grant') {
        const granted = await db.query<{ token: string }>(
          // Above the row's own newest too: a row 0.1.0 wrote (it counted per key) may be ahead.
          `UPDATE lockwarden_leases SET last_token = t.token, token = t.token, holder = $2,
             ttl_ms = $3::integer, lease_until_ms = $4::bigint + $3::integer, granted_at_ms = $4::bigint,
             owner = $5
           FROM (SELECT GREATEST(nextval('lockwarden_token_seq'),
                   (SELECT last_token + 1 FROM lockwarden_leases WHERE key = $1)) AS token) t
           WHERE key = $1 RETURNING lockwarden_leases.token`,
          [request.key, request.requester, request.ttlMs, now, request.owner ?? null],
        );
        await db.query('DELETE FROM lockwarden_waiters WHERE key = $1 AND requester = $2', [
          request.key,
          request.requester,
        ]);
        return grantedAttempt(request, granted.rows[0]!.token, now);
      }
      if (step.keepTicket) {
        await db.query(
          `INSERT INTO lockwarden_waiters (key, requester, priority, seq, expires_at_ms, since_ms, owner)
           VALUES ($1, $2, $3, nextval('lockwarden_waiter_seq'), $4, $5, $6)
           ON CONFLICT (key, requester) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms`,
          [
            request.key,
            request.requester,
            request.priority,
            now + request.queueTicketMs,
            now,
            request.owner ?? null,
          ],
        );
      }
      const live = row.holder !== null && leaseUntil !== null && leaseUntil > now;
      return deniedAttempt(step, now, live ? { holder: row.holder!, leaseUntil: leaseUntil! } : null);
    });
  }

  async inspect(key: string): Promise<LockRecord> {
    parseOrThrow(lockKeySchema, key, 'lock key');
    await this.ready;
    const result = await this.pool.query<LeaseRow>(
      `SELECT *, ${SERVICE_NOW} AS now FROM lockwarden_leases WHERE key = $1`,
      [key],
    );
    const row = result.rows[0];
    const now = row ? Number(row.now) : await this.now();
    const leaseUntil = row?.lease_until_ms == null ? null : Number(row.lease_until_ms);
    const live = row?.holder != null && leaseUntil !== null && leaseUntil > now;
    const tickets = await this.ticketsOf(this.pool, key, now);
    return {
      key,
      holder: live ? row.holder : null,
      token: live ? row.token : null,
      leaseUntil: live ? leaseUntil : null,
      lastToken: row && row.last_token !== '0' ? row.last_token : null,
      ...waitersOf(tickets),
      serviceTime: now,
    };
  }

  async renew(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'renew request');
    return this.transaction(async (db): Promise<FencedActionResult> => {
      const { now, refusal } = await this.lockOwnedRow(db, target);
      if (refusal) return refusal;
      const extended = await db.query<{ lease_until_ms: string }>(
        'UPDATE lockwarden_leases SET lease_until_ms = $2::bigint + ttl_ms WHERE key = $1 RETURNING lease_until_ms',
        [target.key, now],
      );
      return { ok: true, serviceTime: now, leaseUntil: Number(extended.rows[0]!.lease_until_ms) };
    });
  }

  async release(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'release request');
    return this.transaction(async (db): Promise<FencedActionResult> => {
      const { now, refusal } = await this.lockOwnedRow(db, target);
      if (refusal) return refusal;
      await db.query(
        'UPDATE lockwarden_leases SET holder = NULL, token = NULL, ttl_ms = NULL, lease_until_ms = $2, granted_at_ms = NULL, owner = NULL WHERE key = $1',
        [target.key, now],
      );
      return { ok: true, serviceTime: now };
    });
  }

  async position(input: WaiterRef): Promise<number | null> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    await this.ready;
    const tickets = await this.ticketsOf(this.pool, key, await this.now());
    const index = tickets.findIndex((t) => t.requester === requester);
    return index < 0 ? null : index + 1;
  }

  async leave(input: WaiterRef): Promise<void> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    await this.ready;
    await this.pool.query('DELETE FROM lockwarden_waiters WHERE key = $1 AND requester = $2', [
      key,
      requester,
    ]);
  }

  async holdings(): Promise<Holding[]> {
    await this.ready;
    const result = await this.pool.query<LeaseRow>(
      `SELECT key, holder, token, lease_until_ms, owner FROM lockwarden_leases WHERE holder IS NOT NULL AND lease_until_ms > ${SERVICE_NOW}`,
    );
    return result.rows.map((r) => ({
      key: r.key,
      holder: r.holder!,
      token: r.token!,
      leaseUntil: Number(r.lease_until_ms),
      owner: r.owner,
    }));
  }

  async waits(): Promise<Wait[]> {
    await this.ready;
    const result = await this.pool.query<{
      key: string;
      requester: string;
      priority: number;
      seq: string;
      expires_at_ms: string;
      owner: string | null;
    }>(
      `SELECT key, requester, priority, seq, expires_at_ms, owner FROM lockwarden_waiters WHERE expires_at_ms > ${SERVICE_NOW}`,
    );
    return positionsByKey(
      result.rows.map((r) => ({
        key: r.key,
        requester: r.requester,
        priority: r.priority,
        seq: Number(r.seq),
        expiresAt: Number(r.expires_at_ms),
        owner: r.owner,
      })),
    );
  }
  async stalledQueues(): Promise<StalledQueue[]> {
    await this.ready;
    // Driven by the rows whose lease has ended (by the index on lease_until_ms; a key with a ticket
    // has a row, since tickets are written under its lock and a row goes only with no live ticket):
    // free keys only, then their tickets by the (key, requester) key.
    const result = await this.pool.query<{ key: string; requester: string; priority: number; seq: string }>(
      `SELECT w.key, w.requester, w.priority, w.seq FROM lockwarden_leases l
       JOIN lockwarden_waiters w ON w.key = l.key, (SELECT ${SERVICE_NOW} AS now) t
       WHERE l.lease_until_ms <= t.now AND w.expires_at_ms > t.now`,
    );
    return stalledQueuesOf(result.rows.map((r) => ({ ...r, seq: Number(r.seq) })));
  }

  async leasesRunningLow(fractionLeft: number): Promise<LowLease[]> {
    const fraction = parseOrThrow(fractionLeftSchema, fractionLeft, 'leasesRunningLow fraction');
    await this.ready;
    const result = await this.pool.query<LeaseRow & { ttl_ms: number; remaining_ms: string }>(
      `SELECT key, holder, token, ttl_ms, lease_until_ms, lease_until_ms - t.now AS remaining_ms
       FROM lockwarden_leases, (SELECT ${SERVICE_NOW} AS now) t
       WHERE holder IS NOT NULL AND lease_until_ms > t.now AND lease_until_ms - t.now < ttl_ms * $1::float8`,
      [fraction],
    );
    return result.rows.map((r) => ({
      key: r.key,
      holder: r.holder!,
      token: r.token!,
      leaseUntil: Number(r.lease_until_ms),
      ttlMs: Number(r.ttl_ms),
      remainingMs: Number(r.remaining_ms),
    }));
  }

  /**
   * Lapsed tickets, then rows whose lease ended a retention ago with no live ticket, oldest first
   * and a batch at a time, by the indexes on their times. A row another call has locked is skipped:
   * that call may be queueing on it, and the next sweep looks again.
   */
  async forgetIdleKeys(): Promise<number> {
    await this.ready;
    const tickets = await this.pool.query(
      `DELETE FROM lockwarden_waiters WHERE ctid IN (
         SELECT ctid FROM lockwarden_waiters WHERE expires_at_ms <= ${SERVICE_NOW}
         ORDER BY expires_at_ms LIMIT $1 FOR UPDATE SKIP LOCKED)`,
      [FORGET_IDLE_BATCH],
    );
    // A retention of 0 keeps every key (0.1.0's workers, counting tokens per key, may still run).
    if (this.idleKeyRetentionMs === 0) return tickets.rowCount ?? 0;
    const keys = await this.pool.query(
      `WITH t AS (SELECT ${SERVICE_NOW} AS now),
       idle AS (SELECT key FROM lockwarden_leases, t WHERE lease_until_ms <= t.now - $1::bigint
                ORDER BY lease_until_ms LIMIT $2 FOR UPDATE OF lockwarden_leases SKIP LOCKED)
       DELETE FROM lockwarden_leases l USING idle, t WHERE l.key = idle.key
         AND NOT EXISTS (SELECT 1 FROM lockwarden_waiters w WHERE w.key = l.key AND w.expires_at_ms > t.now)`,
      [this.idleKeyRetentionMs, FORGET_IDLE_BATCH],
    );
    return (tickets.rowCount ?? 0) + (keys.rowCount ?? 0);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  // Locks the key's row and says whether (holder, token) may act on it, on the server's clock.
  private async lockOwnedRow(db: PoolClient, target: FencedTarget) {
    const row = await this.lockRow(db, target.key);
    const now = Number(row.now);
    const leaseUntil = row.lease_until_ms === null ? null : Number(row.lease_until_ms);
    return { now, refusal: ownerRefusal(row.holder, row.token, leaseUntil, target, now) };
  }

  /**
   * Creates the key's row on first use (free since now), then locks it for the rest of the
   * transaction. A row forgotten between the two (forgetIdleKeys) is created again.
   */
  private async lockRow(db: PoolClient, key: string): Promise<LeaseRow> {
    for (;;) {
      await db.query(
        `INSERT INTO lockwarden_leases (key, last_token, lease_until_ms) VALUES ($1, 0, ${SERVICE_NOW})
         ON CONFLICT (key) DO NOTHING`,
        [key],
      );
      // The service's time is read once the row is locked, not before a wait for it: a call that
      // waited behind another must not stamp its grant or its place in the queue earlier than that
      // call's own (the outer projection runs on the row the locking scan returns).
      const result = await db.query<LeaseRow>(
        `WITH locked AS (SELECT * FROM lockwarden_leases WHERE key = $1 FOR UPDATE)
         SELECT locked.*, ${SERVICE_NOW} AS now FROM locked`,
        [key],
      );
      if (result.rows[0]) return result.rows[0];
    }
  }

  private async ticketsOf(db: Pick<Pool, 'query'>, key: string, now: number): Promise<Ticket[]> {
    const result = await db.query<{
      requester: string;
      priority: number;
      seq: string;
      expires_at_ms: string;
      since_ms: string | null;
    }>(
      'SELECT requester, priority, seq, expires_at_ms, since_ms FROM lockwarden_waiters WHERE key = $1 AND expires_at_ms > $2',
      [key, now],
    );
    return result.rows
      .map((r) => ({
        requester: r.requester,
        priority: r.priority,
        seq: Number(r.seq),
        expiresAt: Number(r.expires_at_ms),
        since: r.since_ms === null ? null : Number(r.since_ms),
      }))
      .sort(queueOrder);
  }

  private async now(): Promise<number> {
    const result = await this.pool.query<{ now: string }>(`SELECT ${SERVICE_NOW} AS now`);
    return Number(result.rows[0]!.now);
  }

  private async transaction<T>(fn: (db: PoolClient) => Promise<T>): Promise<T> {
    await this.ready;
    const db = await this.pool.connect();
    try {
      await db.query('BEGIN');
      const result = await fn(db);
      await db.query('COMMIT');
      return result;
    } catch (error) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      db.release();
    }
  }
}
