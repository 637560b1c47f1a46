// The embedded backend: one SQLite file, WAL, IMMEDIATE transactions, several processes on one
// host.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import {
  type AcquireAttempt,
  ABSOLUTE_MAX_TTL_MS,
  type FencedActionResult,
  fencedTargetSchema,
  type FencedTarget,
  type Holding,
  type Lease,
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
  waitersOf,
  type Ticket,
  withinRequesterLimit,
} from './grantRules';
import type { LockRecord, LockService, LockServiceLimits, LowLease, StalledQueue } from './lockService';
import {
  DEFAULT_MAX_KEYS_PER_REQUESTER,
  DEFAULT_MAX_WAITERS_PER_KEY,
  FORGET_IDLE_BATCH,
  IDLE_KEY_RETENTION_MS,
} from '../policy/constants';

/** Options of the embedded backend. */
export interface SqliteLockServiceOptions extends LockServiceLimits {
  /** Path of the database file; several processes on one host may open the same file. */
  path: string;
}

// The service clock: SQLite's own reading of the time, in ms, taken inside the transaction.
const SERVICE_NOW = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

interface LeaseRow {
  key: string;
  last_token: bigint;
  holder: string | null;
  token: bigint | null;
  lease_until_ms: bigint | null;
  granted_at_ms: bigint | null;
  owner: string | null;
}

/**
 * The embedded default backend: one SQLite file in WAL mode, every compound step in an IMMEDIATE
 * transaction so concurrent processes serialize on the write lock. Tokens come from one counter per
 * file (`lock_token_seq`), so a key's row can go once the key is idle (forgetIdleKeys) and its next
 * token is still above every earlier one, also after the file is reopened. A row's `lease_until_ms`
 * is when its lease ends or ended (a release ends it then; a row a 0.1.0 release left without one is
 * given the time the file is opened): the index on it serves the sweeps' reads and the forgetting.
 */
export class SqliteLockService implements LockService {
  readonly backend = 'sqlite';
  readonly minTtlMs = 1;
  private readonly db: Database.Database;
  private readonly maxTtlMs: number;
  private readonly idleKeyRetentionMs: number;
  private readonly maxWaitersPerKey: number;
  private readonly maxKeysPerRequester: number;
  private readonly sql;

  constructor(options: SqliteLockServiceOptions) {
    this.maxTtlMs = options.maxTtlMs ?? ABSOLUTE_MAX_TTL_MS;
    this.idleKeyRetentionMs = options.idleKeyRetentionMs ?? IDLE_KEY_RETENTION_MS;
    this.maxWaitersPerKey = options.maxWaitersPerKey ?? DEFAULT_MAX_WAITERS_PER_KEY;
    this.maxKeysPerRequester = options.maxKeysPerRequester ?? DEFAULT_MAX_KEYS_PER_REQUESTER;
    fs.mkdirSync(path.dirname(path.resolve(options.path)), { recursive: true });
    this.db = new Database(options.path, { timeout: 5_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS lock_leases (
        key TEXT PRIMARY KEY, last_token INTEGER NOT NULL, holder TEXT, token INTEGER,
        ttl_ms INTEGER, lease_until_ms INTEGER, granted_at_ms INTEGER) STRICT;
      CREATE TABLE IF NOT EXISTS lock_waiters (
        key TEXT NOT NULL, requester TEXT NOT NULL, priority INTEGER NOT NULL, seq INTEGER NOT NULL,
        expires_at_ms INTEGER NOT NULL, since_ms INTEGER, PRIMARY KEY (key, requester)) STRICT;
      CREATE INDEX IF NOT EXISTS lock_leases_until ON lock_leases (lease_until_ms);
      CREATE INDEX IF NOT EXISTS lock_waiters_expiry ON lock_waiters (expires_at_ms);
      CREATE INDEX IF NOT EXISTS lock_waiters_requester ON lock_waiters (requester, expires_at_ms);
      CREATE INDEX IF NOT EXISTS lock_leases_holder ON lock_leases (holder, lease_until_ms);`);
    this.startTokenSequence();
    // A file from before tickets kept their arrival time, or before tickets and leases named their
    // owner, gains the columns (its old rows show none).
    this.addMissingColumn('lock_waiters', 'since_ms', 'INTEGER');
    this.addMissingColumn('lock_waiters', 'owner', 'TEXT');
    this.addMissingColumn('lock_leases', 'owner', 'TEXT');
    const db = this.db;
    this.sql = {
      now: db.prepare(`SELECT ${SERVICE_NOW}`).pluck(),
      lease: db.prepare('SELECT * FROM lock_leases WHERE key = ?').safeIntegers(true),
      liveLeases: db
        .prepare(
          'SELECT key, holder, token, lease_until_ms, owner FROM lock_leases WHERE holder IS NOT NULL AND lease_until_ms > ?',
        )
        .safeIntegers(true),
      // The file's next token: above the counter and above the key's own newest (a row written by
      // 0.1.0, which counted per key, may be ahead of the counter).
      nextToken: db
        .prepare(
          `UPDATE lock_token_seq SET last_token = MAX(last_token + 1,
             COALESCE((SELECT last_token + 1 FROM lock_leases WHERE key = ?), 0))
           RETURNING last_token`,
        )
        .pluck()
        .safeIntegers(true),
      grant: db.prepare(
        `INSERT INTO lock_leases (key, last_token, holder, token, ttl_ms, lease_until_ms, granted_at_ms, owner)
         VALUES (@key, @token, @holder, @token, @ttl, @now + @ttl, @now, @owner)
         ON CONFLICT (key) DO UPDATE SET last_token = @token, holder = @holder, token = @token,
           ttl_ms = @ttl, lease_until_ms = @now + @ttl, granted_at_ms = @now, owner = @owner`,
      ),
      extend: db
        .prepare(
          'UPDATE lock_leases SET lease_until_ms = @now + ttl_ms WHERE key = @key RETURNING lease_until_ms',
        )
        .pluck(),
      clear: db.prepare(
        'UPDATE lock_leases SET holder = NULL, token = NULL, ttl_ms = NULL, lease_until_ms = ?, granted_at_ms = NULL, owner = NULL WHERE key = ?',
      ),
      // Keys whose lease ended before the cutoff with no live ticket, oldest first, a batch at a time.
      forgetIdle: db.prepare(
        `DELETE FROM lock_leases WHERE key IN (
           SELECT key FROM lock_leases l WHERE lease_until_ms <= @cutoff
             AND NOT EXISTS (SELECT 1 FROM lock_waiters w WHERE w.key = l.key AND w.expires_at_ms > @now)
           ORDER BY lease_until_ms LIMIT @batch)`,
      ),
      dropExpiredTickets: db.prepare('DELETE FROM lock_waiters WHERE expires_at_ms <= ?'),
      tickets: db.prepare(
        'SELECT requester, priority, seq, expires_at_ms AS expiresAt, since_ms AS since FROM lock_waiters WHERE key = ? AND expires_at_ms > ?',
      ),
      allTickets: db.prepare(
        'SELECT key, requester, priority, seq, expires_at_ms AS expiresAt, owner FROM lock_waiters WHERE expires_at_ms > ?',
      ),
      keepTicket: db.prepare(
        `INSERT INTO lock_waiters (key, requester, priority, seq, expires_at_ms, since_ms, owner)
         VALUES (@key, @requester, @priority, (SELECT COALESCE(MAX(seq), 0) + 1 FROM lock_waiters), @expires, @now, @owner)
         ON CONFLICT (key, requester) DO UPDATE SET expires_at_ms = @expires`,
      ),
      dropTicket: db.prepare('DELETE FROM lock_waiters WHERE key = ? AND requester = ?'),
      // The other keys a requester holds or waits for now, by the indexes on (requester, expiry)
      // and (holder, deadline).
      engagedElsewhere: db
        .prepare(
          `SELECT (SELECT COUNT(*) FROM lock_waiters
                    WHERE requester = @requester AND expires_at_ms > @now AND key != @key)
                + (SELECT COUNT(*) FROM lock_leases
                    WHERE holder = @requester AND lease_until_ms > @now AND key != @key)`,
        )
        .pluck(),
      runningLow: db.prepare(
        `SELECT key, holder, token, ttl_ms, lease_until_ms, lease_until_ms - @now AS remaining_ms
         FROM lock_leases
         WHERE holder IS NOT NULL AND lease_until_ms > @now AND lease_until_ms - @now < ttl_ms * @fraction`,
      ),
      // Driven by the keys' rows (a key with a ticket has one: its first ticket waited behind a
      // lease, and a row goes only once no ticket is live) whose lease has ended, by the index on
      // lease_until_ms: free keys only, then their tickets by the (key, requester) primary key.
      stalledTickets: db.prepare(
        `SELECT w.key AS key, w.requester AS requester, w.priority AS priority, w.seq AS seq
         FROM lock_leases l JOIN lock_waiters w ON w.key = l.key
         WHERE l.lease_until_ms <= @now AND w.expires_at_ms > @now`,
      ),
    };
  }

  async tryAcquire(input: TryAcquireRequest): Promise<AcquireAttempt> {
    const request = parseTryAcquire(input, this.maxTtlMs);
    return this.immediate((): AcquireAttempt => {
      const now = this.now();
      this.sql.dropExpiredTickets.run(now);
      const row = this.readLease(request.key);
      const tickets = this.ticketsOf(request.key, now);
      let step = decideGrant(
        {
          now,
          holder: row?.holder ?? null,
          leaseUntil: toNumber(row?.lease_until_ms),
          tickets,
          maxWaiters: this.maxWaitersPerKey,
        },
        request,
      );
      if (
        engagesAfresh(
          step,
          tickets.some((t) => t.requester === request.requester),
        )
      ) {
        const elsewhere = this.sql.engagedElsewhere.get({
          requester: request.requester,
          key: request.key,
          now,
        });
        step = withinRequesterLimit(step, elsewhere as number, this.maxKeysPerRequester);
      }
      if (step.kind === 'return-existing') return { granted: true, lease: leaseOf(row!) };
      if (step.kind === 'grant') {
        const token = this.sql.nextToken.get(request.key) as bigint;
        this.sql.grant.run({
          key: request.key,
          token,
          holder: request.requester,
          ttl: request.ttlMs,
          now,
          owner: request.owner ?? null,
        });
        this.sql.dropTicket.run(request.key, request.requester);
        return grantedAttempt(request, token.toString(), now);
      }
      if (step.keepTicket) {
        this.sql.keepTicket.run({
          ...request,
          owner: request.owner ?? null,
          expires: now + request.queueTicketMs,
          now,
        });
      }
      const leaseUntil = toNumber(row?.lease_until_ms);
      const live = row?.holder != null && leaseUntil! > now;
      return deniedAttempt(step, now, live ? { holder: row.holder!, leaseUntil: leaseUntil! } : null);
    });
  }

  async inspect(key: string): Promise<LockRecord> {
    parseOrThrow(lockKeySchema, key, 'lock key');
    return this.immediate(() => {
      const now = this.now();
      const row = this.readLease(key);
      const live = row?.holder != null && toNumber(row.lease_until_ms)! > now;
      return {
        key,
        holder: live ? row.holder : null,
        token: live ? row.token!.toString() : null,
        leaseUntil: live ? toNumber(row.lease_until_ms) : null,
        lastToken: row ? row.last_token.toString() : null,
        ...waitersOf(this.ticketsOf(key, now)),
        serviceTime: now,
      };
    });
  }

  async renew(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'renew request');
    return this.immediate((): FencedActionResult => {
      const now = this.now();
      const refusal = this.checkOwner(target, now);
      if (refusal) return refusal;
      const leaseUntil = this.sql.extend.get({ key: target.key, now }) as number;
      return { ok: true, serviceTime: now, leaseUntil };
    });
  }

  async release(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'release request');
    return this.immediate((): FencedActionResult => {
      const now = this.now();
      const refusal = this.checkOwner(target, now);
      if (refusal) return refusal;
      this.sql.clear.run(now, target.key);
      return { ok: true, serviceTime: now };
    });
  }

  async position(input: WaiterRef): Promise<number | null> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    const tickets = this.ticketsOf(key, this.now());
    const index = tickets.findIndex((t) => t.requester === requester);
    return index < 0 ? null : index + 1;
  }

  async leave(input: WaiterRef): Promise<void> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    this.sql.dropTicket.run(key, requester);
  }

  async holdings(): Promise<Holding[]> {
    const rows = this.sql.liveLeases.all(this.now()) as LeaseRow[];
    return rows.map((r) => ({
      key: r.key,
      holder: r.holder!,
      token: r.token!.toString(),
      leaseUntil: toNumber(r.lease_until_ms)!,
      owner: r.owner,
    }));
  }

  async waits(): Promise<Wait[]> {
    const rows = this.sql.allTickets.all(this.now()) as (Ticket & { key: string })[];
    return positionsByKey(rows);
  }

  async stalledQueues(): Promise<StalledQueue[]> {
    const rows = this.sql.stalledTickets.all({ now: this.now() }) as (Ticket & { key: string })[];
    return stalledQueuesOf(rows);
  }

  async leasesRunningLow(fractionLeft: number): Promise<LowLease[]> {
    const fraction = parseOrThrow(fractionLeftSchema, fractionLeft, 'leasesRunningLow fraction');
    const rows = this.sql.runningLow.all({ now: this.now(), fraction }) as (LeaseRow & {
      ttl_ms: bigint;
      remaining_ms: bigint;
    })[];
    return rows.map((r) => ({
      key: r.key,
      holder: r.holder!,
      token: r.token!.toString(),
      leaseUntil: toNumber(r.lease_until_ms)!,
      ttlMs: Number(r.ttl_ms),
      remainingMs: Number(r.remaining_ms),
    }));
  }

  async forgetIdleKeys(): Promise<number> {
    return this.immediate(() => {
      const now = this.now();
      const tickets = this.sql.dropExpiredTickets.run(now).changes;
      // A retention of 0 keeps every key (0.1.0's workers, counting tokens per key, may still run).
      if (this.idleKeyRetentionMs === 0) return tickets;
      const cutoff = now - this.idleKeyRetentionMs;
      return tickets + this.sql.forgetIdle.run({ cutoff, now, batch: FORGET_IDLE_BATCH }).changes;
    });
  }

  async close(): Promise<void> {
    this.db.close();
  }

  /**
   * The file's token counter, created once from the newest token of any key (a file from 0.1.0 kept
   * a counter per key): every later grant draws from it.
   */
  private startTokenSequence(): void {
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS lock_token_seq (
        id INTEGER PRIMARY KEY CHECK (id = 1), last_token INTEGER NOT NULL) STRICT;
      INSERT OR IGNORE INTO lock_token_seq (id, last_token)
        VALUES (1, (SELECT COALESCE(MAX(last_token), 0) FROM lock_leases));
      UPDATE lock_leases SET lease_until_ms = CAST(unixepoch('subsec') * 1000 AS INTEGER)
        WHERE lease_until_ms IS NULL;`);
  }

  private checkOwner(target: FencedTarget, now: number) {
    const row = this.readLease(target.key);
    return ownerRefusal(
      row?.holder ?? null,
      row?.token?.toString() ?? null,
      toNumber(row?.lease_until_ms),
      target,
      now,
    );
  }

  private addMissingColumn(table: string, column: string, type: string): void {
    const columns = this.db.pragma(`table_info(${table})`) as { name: string }[];
    if (!columns.some((c) => c.name === column))
      this.db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
  }

  private immediate<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  private now(): number {
    return this.sql.now.get() as number;
  }

  private readLease(key: string): LeaseRow | undefined {
    return this.sql.lease.get(key) as LeaseRow | undefined;
  }

  private ticketsOf(key: string, now: number): Ticket[] {
    return (this.sql.tickets.all(key, now) as Ticket[]).sort(queueOrder);
  }
}

function toNumber(value: bigint | number | null | undefined): number | null {
  return value == null ? null : Number(value);
}

function leaseOf(row: LeaseRow): Lease {
  return {
    key: row.key,
    holder: row.holder!,
    token: row.token!.toString(),
    leaseUntil: toNumber(row.lease_until_ms)!,
    grantedAt: toNumber(row.granted_at_ms)!,
  };
}
