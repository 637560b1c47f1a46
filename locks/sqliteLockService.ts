import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import {
  type AcquireAttempt,
  ABSOLUTE_MAX_TTL_MS,
  denial,
  type FencedActionResult,
  fencedTargetSchema,
  type FencedTarget,
  lockKeySchema,
  parseOrThrow,
  tryAcquireRequestSchema,
  type TryAcquireRequest,
} from '../policy/lockSchemas';
import { InvalidLockRequestError } from '../policy/errors';
import type { LockRecord, LockService } from './lockService';

/** Options of the embedded backend. */
export interface SqliteLockServiceOptions {
  /** Path of the database file; several processes on one host may open the same file. */
  path: string;
  /** Longest TTL this service grants. */
  maxTtlMs?: number;
}

// The service clock: SQLite's own reading of the time, in ms, taken inside the transaction.
const SERVICE_NOW = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

interface LockRow {
  key: string;
  last_token: bigint;
  holder: string | null;
  token: bigint | null;
  ttl_ms: number | null;
  lease_until_ms: number | null;
  granted_at_ms: number | null;
}

/**
 * The embedded default backend: one SQLite file in WAL mode, every compound step in an IMMEDIATE
 * transaction so concurrent processes serialize on the write lock. A row per key is never deleted,
 * so its `last_token` keeps tokens increasing after release and after the file is reopened.
 */
export class SqliteLockService implements LockService {
  readonly backend = 'sqlite';
  private readonly db: Database.Database;
  private readonly maxTtlMs: number;
  private readonly statements;

  constructor(options: SqliteLockServiceOptions) {
    this.maxTtlMs = options.maxTtlMs ?? ABSOLUTE_MAX_TTL_MS;
    fs.mkdirSync(path.dirname(path.resolve(options.path)), { recursive: true });
    this.db = new Database(options.path, { timeout: 5_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS lock_leases (
      key TEXT PRIMARY KEY,
      last_token INTEGER NOT NULL,
      holder TEXT,
      token INTEGER,
      ttl_ms INTEGER,
      lease_until_ms INTEGER,
      granted_at_ms INTEGER
    ) STRICT`);
    const db = this.db;
    this.statements = {
      now: db.prepare(`SELECT ${SERVICE_NOW} AS now`).pluck(),
      read: db.prepare('SELECT * FROM lock_leases WHERE key = ?').safeIntegers(true),
      grant: db
        .prepare(
          `INSERT INTO lock_leases (key, last_token, holder, token, ttl_ms, lease_until_ms, granted_at_ms)
           VALUES (@key, 1, @holder, 1, @ttl, @now + @ttl, @now)
           ON CONFLICT (key) DO UPDATE SET last_token = last_token + 1, holder = @holder,
             token = last_token + 1, ttl_ms = @ttl, lease_until_ms = @now + @ttl, granted_at_ms = @now
           RETURNING token`,
        )
        .pluck()
        .safeIntegers(true),
      extend: db
        .prepare(
          'UPDATE lock_leases SET lease_until_ms = @now + ttl_ms WHERE key = @key RETURNING lease_until_ms',
        )
        .pluck(),
      clear: db.prepare(
        'UPDATE lock_leases SET holder = NULL, token = NULL, ttl_ms = NULL, lease_until_ms = NULL, granted_at_ms = NULL WHERE key = ?',
      ),
    };
  }

  async tryAcquire(input: TryAcquireRequest): Promise<AcquireAttempt> {
    const request = parseOrThrow(tryAcquireRequestSchema, input, 'tryAcquire request');
    if (request.ttlMs > this.maxTtlMs) {
      throw new InvalidLockRequestError('tryAcquire request', [`ttlMs: must be at most ${this.maxTtlMs} ms`]);
    }
    return this.immediate((): AcquireAttempt => {
      const now = this.now();
      const row = this.read(request.key);
      if (row?.holder != null && row.lease_until_ms! > now) {
        if (row.holder === request.requester) {
          // A retried activity whose first grant was recorded here but lost on the way back.
          return { granted: true, lease: this.leaseOf(row) };
        }
        return {
          granted: false,
          denial: denial('HELD', {
            holder: row.holder,
            holderLeaseUntil: row.lease_until_ms,
            waiters: 0,
            serviceTime: now,
          }),
        };
      }
      const token = this.statements.grant.get({
        key: request.key,
        holder: request.requester,
        ttl: request.ttlMs,
        now,
      }) as bigint;
      return {
        granted: true,
        lease: {
          key: request.key,
          holder: request.requester,
          token: token.toString(),
          leaseUntil: now + request.ttlMs,
          grantedAt: now,
        },
      };
    });
  }

  async inspect(key: string): Promise<LockRecord> {
    parseOrThrow(lockKeySchema, key, 'lock key');
    const now = this.now();
    const row = this.read(key);
    const live = row?.holder != null && row.lease_until_ms! > now;
    return {
      key,
      holder: live ? row.holder : null,
      token: live ? row.token!.toString() : null,
      leaseUntil: live ? row.lease_until_ms : null,
      lastToken: row ? row.last_token.toString() : null,
      serviceTime: now,
    };
  }

  async renew(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'renew request');
    return this.immediate((): FencedActionResult => {
      const now = this.now();
      const refusal = this.checkOwner(target, now, { requireLive: true });
      if (refusal) return refusal;
      const leaseUntil = this.statements.extend.get({ key: target.key, now }) as number;
      return { ok: true, serviceTime: now, leaseUntil };
    });
  }

  async release(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'release request');
    return this.immediate((): FencedActionResult => {
      const now = this.now();
      // An expired lease may still be cleared by its owner: nobody else has taken it.
      const refusal = this.checkOwner(target, now, { requireLive: false });
      if (refusal) return refusal;
      this.statements.clear.run(target.key);
      return { ok: true, serviceTime: now };
    });
  }

  async close(): Promise<void> {
    this.db.close();
  }

  private checkOwner(target: FencedTarget, now: number, { requireLive }: { requireLive: boolean }) {
    const row = this.read(target.key);
    if (row?.holder == null || row.holder !== target.holder) {
      return { ok: false as const, reason: 'not-holder' as const, serviceTime: now };
    }
    if (row.token!.toString() !== target.token) {
      return { ok: false as const, reason: 'stale-token' as const, serviceTime: now };
    }
    if (requireLive && row.lease_until_ms! <= now) {
      return { ok: false as const, reason: 'expired' as const, serviceTime: now };
    }
    return null;
  }

  private immediate<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  private now(): number {
    return this.statements.now.get() as number;
  }

  private read(key: string): LockRow | undefined {
    const row = this.statements.read.get(key) as Record<string, unknown> | undefined;
    if (!row) return undefined;
    // safeIntegers returns every INTEGER as bigint; only the token columns need the width.
    const asNumber = (v: unknown) => (v == null ? null : Number(v));
    return {
      key: row.key as string,
      last_token: row.last_token as bigint,
      holder: row.holder as string | null,
      token: row.token as bigint | null,
      ttl_ms: asNumber(row.ttl_ms),
      lease_until_ms: asNumber(row.lease_until_ms),
      granted_at_ms: asNumber(row.granted_at_ms),
    };
  }

  private leaseOf(row: LockRow) {
    return {
      key: row.key,
      holder: row.holder!,
      token: row.token!.toString(),
      leaseUntil: row.lease_until_ms!,
      grantedAt: row.granted_at_ms!,
    };
  }
}
