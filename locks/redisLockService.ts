// The Redis backend: one Lua script per compound step, on Redis's clock.
import { createClient, type RedisClientType } from 'redis';
import { credentialRefusal } from '../policy/lockContract/credentialRefusal';
import {
  type AcquireAttempt,
  ABSOLUTE_MAX_TTL_MS,
  denial,
  type DenialCode,
  type FencedActionResult,
  fencedTargetSchema,
  fractionLeftSchema,
  type FencedTarget,
  type Holding,
  lockKeySchema,
  parseOrThrow,
  parseTryAcquire,
  type TryAcquireRequest,
  type Wait,
  waiterSchema,
  type WaiterRef,
} from '../policy/lockContract/lockSchemas';
import { CorruptLockStateError } from '../policy/errors';
import { type Ticket, waitersOf } from './grantRules';
import type { LockRecord, LockService, LockServiceLimits, LowLease, StalledQueue } from './lockService';
import { takeTlsFiles } from './lockServiceTls';
import {
  DEFAULT_MAX_KEYS_PER_REQUESTER,
  DEFAULT_MAX_WAITERS_PER_KEY,
  FORGET_IDLE_BATCH,
  IDLE_KEY_RETENTION_MS,
} from '../policy/constants';
import {
  ACQUIRE,
  FORGET,
  INSPECT,
  MIGRATE_KEY_SET,
  POSITION,
  RELEASE,
  RENEW,
  RUNNING_LOW,
  SNAPSHOT,
  STALLED,
} from './redisScripts';

/** Options of the Redis backend. */
interface RedisLockServiceOptions extends LockServiceLimits {
  /**
   * A `redis://` or `rediss://` (TLS) URL of a single Redis server (not Redis Cluster, not Redlock),
   * with an ACL user and password in it, and the TLS files in `sslrootcert`, `sslcert`, `sslkey`.
   */
  url: string;
}

type Reply = (string | number | null | Reply[])[];

const keysOf = (key: string) => ({
  lease: `lockwarden:lease:${key}`,
  token: `lockwarden:token:${key}`,
  waiters: `lockwarden:waiters:${key}`,
  waiterExpiry: `lockwarden:waiter-exp:${key}`,
  waiterSince: `lockwarden:waiter-since:${key}`,
  waiterOwner: `lockwarden:waiter-owner:${key}`,
});
/** 0.1.0's set of every key ever used; open() moves it into the indexes below, then it is gone. */
const KEY_SET_OF_0_1 = 'lockwarden:keys';
const HELD = 'lockwarden:held';
const QUEUED = 'lockwarden:queued';
const TOKEN_SEQ = 'lockwarden:token-seq';
/** The keys a requester holds or waits for, counted against its limit. */
const requesterIndexOf = (requester: string) => `lockwarden:requester:${requester}`;

/** Redis's replies that mean a stored value is not what lockwarden wrote there. */
const NOT_OURS = /^(WRONGTYPE|ERR value is not an integer|ERR (user_script|Error running script))/;

/** The lock key a Redis key of lockwarden's names, for a CorruptLockState failure. */
function lockKeyOf(redisKey: string | undefined): string {
  return redisKey?.replace(/^lockwarden:[a-z-]+:/, '') ?? '(unknown key)';
}
const WAITER_SEQ = 'lockwarden:waiter-seq';

/**
 * The Redis backend: one Lua script per compound step, so each is atomic inside Redis and reads
 * Redis's own clock. Tokens come from one INCR counter per server (`lockwarden:token-seq`), so an
 * idle key's records can expire and its next token is still above every earlier one; the sweeps read
 * two indexes of the keys held and queued, not every key ever used. Tokens stay monotonic across a
 * restart only if the server persists every write (appendonly with appendfsync
 * always, as scripts/lock-servers.sh runs it). A failover to a replica that had not received the
 * last INCRs, or a restart without persistence, would hand out tokens already used: fencing would
 * then let a stale holder's write through. Run Redis with AOF fsync always and no unsafe failover,
 * or use PostgreSQL or etcd when that cannot be guaranteed.
 */
export class RedisLockService implements LockService {
  readonly backend = 'redis';
  readonly minTtlMs = 1;
  private readonly shas = new Map<string, string>();

  private constructor(
    private readonly client: RedisClientType,
    private readonly maxTtlMs: number,
    private readonly retentionMs: number,
    private readonly maxWaitersPerKey: number,
    private readonly maxKeysPerRequester: number,
  ) {}

  /** Connects to the server. */
  static async open(options: RedisLockServiceOptions): Promise<RedisLockService> {
    // A refused AUTH or ACL is not a dropped connection: stop there (the driver would retry forever)
    // and let open() fail with it; a dropped connection is retried, backing off to 2 s.
    // The driver stops only on an `instanceof Error` of its own realm; node's TLS errors come from
    // another one under a test runner's sandbox, so the refusal is handed back in a new Error.
    const reconnectStrategy = (retries: number, cause: Error) =>
      credentialRefusal(cause) !== null
        ? Object.assign(new Error(cause.message), { code: (cause as NodeJS.ErrnoException).code, cause })
        : Math.min(50 * 2 ** retries, 2_000);
    // rediss:// is TLS; its CA and client certificate come from the URL's sslrootcert, sslcert, sslkey.
    const { url, files } = takeTlsFiles(options.url);
    const tls = url.startsWith('rediss://') ? { tls: true as const, ...files } : {};
    const client = createClient({ url, socket: { reconnectStrategy, ...tls } }) as RedisClientType;
    client.on('error', () => undefined); // surfaced to callers through the failed command instead
    await client.connect();
    const service = new RedisLockService(
      client,
      options.maxTtlMs ?? ABSOLUTE_MAX_TTL_MS,
      options.idleKeyRetentionMs ?? IDLE_KEY_RETENTION_MS,
      options.maxWaitersPerKey ?? DEFAULT_MAX_WAITERS_PER_KEY,
      options.maxKeysPerRequester ?? DEFAULT_MAX_KEYS_PER_REQUESTER,
    );
    await service.migrateKeySet();
    return service;
  }

  async tryAcquire(input: TryAcquireRequest): Promise<AcquireAttempt> {
    const request = parseTryAcquire(input, this.maxTtlMs);
    const k = keysOf(request.key);
    const reply = await this.run(
      ACQUIRE,
      [
        k.lease,
        k.token,
        k.waiters,
        k.waiterExpiry,
        HELD,
        WAITER_SEQ,
        k.waiterSince,
        k.waiterOwner,
        QUEUED,
        TOKEN_SEQ,
        requesterIndexOf(request.requester),
      ],
      [
        request.key,
        request.requester,
        String(request.ttlMs),
        request.fairness,
        String(request.priority),
        String(request.queueTicketMs),
        request.owner ?? '',
        String(this.retentionMs),
        String(this.maxWaitersPerKey),
        String(this.maxKeysPerRequester),
      ],
    );
    const [kind] = reply;
    if (kind === 'existing' || kind === 'granted') {
      const [, holder, token, leaseUntil, grantedAt] = reply;
      return {
        granted: true,
        lease: {
          key: request.key,
          holder: String(holder),
          token: String(token),
          leaseUntil: Number(leaseUntil),
          grantedAt: Number(grantedAt),
        },
      };
    }
    const [, code, holder, holderLeaseUntil, waiters, position, serviceTime] = reply;
    return {
      granted: false,
      denial: denial(code as DenialCode, {
        holder: holder === null ? null : String(holder),
        holderLeaseUntil: holderLeaseUntil === null ? null : Number(holderLeaseUntil),
        waiters: Number(waiters),
        position: position === null ? null : Number(position),
        serviceTime: Number(serviceTime),
      }),
    };
  }

  async inspect(key: string): Promise<LockRecord> {
    parseOrThrow(lockKeySchema, key, 'lock key');
    const k = keysOf(key);
    const [holder, token, leaseUntil, lastToken, queue, now] = await this.run(
      INSPECT,
      [k.lease, k.token, k.waiters, k.waiterExpiry, k.waiterSince, k.waiterOwner],
      [],
    );
    const flat = Array.isArray(queue) ? queue : [];
    const tickets: Ticket[] = [];
    for (let i = 0; i < flat.length; i += 4) {
      tickets.push({
        requester: String(flat[i]),
        priority: Number(flat[i + 1]),
        seq: i,
        expiresAt: Number(flat[i + 2]),
        since: flat[i + 3] === null ? null : Number(flat[i + 3]),
      });
    }
    return {
      key,
      holder: holder === null ? null : String(holder),
      token: token === null ? null : String(token),
      leaseUntil: leaseUntil === null ? null : Number(leaseUntil),
      lastToken: lastToken === null ? null : String(lastToken),
      ...waitersOf(tickets),
      serviceTime: Number(now),
    };
  }

  async renew(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'renew request');
    return this.fenced(RENEW, target);
  }

  async release(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'release request');
    return this.fenced(RELEASE, target);
  }

  async position(input: WaiterRef): Promise<number | null> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    // One key's queue, not the snapshot of every key: a waiter's place costs O(its queue).
    const k = keysOf(key);
    const rank = await this.run(
      POSITION,
      [k.lease, k.token, k.waiters, k.waiterExpiry, k.waiterSince, k.waiterOwner],
      [requester],
    );
    return rank === null ? null : Number(rank);
  }

  async leave(input: WaiterRef): Promise<void> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    const k = keysOf(key);
    await this.client
      .multi()
      .zRem(k.waiters, requester)
      .hDel(k.waiterExpiry, requester)
      .hDel(k.waiterSince, requester)
      .hDel(k.waiterOwner, requester)
      .zRem(requesterIndexOf(requester), key)
      .exec();
  }

  async holdings(): Promise<Holding[]> {
    return (await this.snapshot()).holdings;
  }

  async waits(): Promise<Wait[]> {
    return (await this.snapshot()).waits;
  }

  async stalledQueues(): Promise<StalledQueue[]> {
    const reply = (await this.run(STALLED, [QUEUED], [])) as unknown as (string | string[])[];
    const queues: StalledQueue[] = [];
    for (let i = 0; i < reply.length; i += 2)
      queues.push({ key: String(reply[i]), waiters: (reply[i + 1] as string[]).map(String) });
    return queues;
  }

  async leasesRunningLow(fractionLeft: number): Promise<LowLease[]> {
    const fraction = parseOrThrow(fractionLeftSchema, fractionLeft, 'leasesRunningLow fraction');
    const reply = await this.run(RUNNING_LOW, [HELD], [String(fraction)]);
    const leases: LowLease[] = [];
    for (let i = 0; i < reply.length; i += 6)
      leases.push({
        key: String(reply[i]),
        holder: String(reply[i + 1]),
        token: String(reply[i + 2]),
        leaseUntil: Number(reply[i + 3]),
        ttlMs: Number(reply[i + 4]),
        remainingMs: Number(reply[i + 5]),
      });
    return leases;
  }

  async forgetIdleKeys(): Promise<number> {
    return Number(await this.run(FORGET, [HELD, QUEUED], [String(FORGET_IDLE_BATCH)]));
  }

  async close(): Promise<void> {
    await this.client.quit();
  }

  /**
   * Moves a store written by 0.1.0 onto the indexes and the one token counter, a batch at a time;
   * not while keys are kept for ever (retention 0: 0.1.0's workers, still running, read its set).
   */
  private async migrateKeySet(): Promise<void> {
    if (this.retentionMs === 0) return;
    const step = [KEY_SET_OF_0_1, HELD, QUEUED, TOKEN_SEQ];
    const args = [String(this.retentionMs), String(FORGET_IDLE_BATCH)];
    while (
      (await this.client.exists(KEY_SET_OF_0_1)) === 1 &&
      Number(await this.run(MIGRATE_KEY_SET, step, args)) > 0
    );
  }

  private async snapshot(): Promise<{ holdings: Holding[]; waits: Wait[] }> {
    const reply = await this.run(SNAPSHOT, [HELD, QUEUED], []);
    const split = reply.indexOf('|');
    const leases = reply.slice(1, split);
    const tickets = reply.slice(split + 1);
    const holdings: Holding[] = [];
    const ownerOf = (value: Reply[number] | undefined) => (value ? String(value) : null);
    for (let i = 0; i < leases.length; i += 5) {
      holdings.push({
        key: String(leases[i]),
        holder: String(leases[i + 1]),
        token: String(leases[i + 2]),
        leaseUntil: Number(leases[i + 3]),
        owner: ownerOf(leases[i + 4]),
      });
    }
    const waits: Wait[] = [];
    for (let i = 0; i < tickets.length; i += 4) {
      waits.push({
        key: String(tickets[i]),
        requester: String(tickets[i + 1]),
        position: Number(tickets[i + 2]),
        owner: ownerOf(tickets[i + 3]),
      });
    }
    return { holdings, waits };
  }

  private async fenced(script: string, target: FencedTarget): Promise<FencedActionResult> {
    const k = keysOf(target.key);
    const [kind, detail, now] = await this.run(
      script,
      [k.lease, k.token, HELD, requesterIndexOf(target.holder)],
      [target.holder, target.token, target.key, String(this.retentionMs)],
    );
    if (kind === 'ok') {
      return detail === null
        ? { ok: true, serviceTime: Number(now) }
        : { ok: true, serviceTime: Number(now), leaseUntil: Number(detail) };
    }
    return {
      ok: false,
      reason: detail as 'not-holder' | 'stale-token' | 'expired',
      serviceTime: Number(now),
    };
  }

  // EVALSHA with the cached digest; a restarted server has lost its script cache, so load and retry once.
  private async run(script: string, keys: string[], args: string[]): Promise<Reply> {
    let sha = this.shas.get(script);
    if (!sha) {
      sha = await this.client.scriptLoad(script);
      this.shas.set(script, sha);
    }
    try {
      return (await this.client.evalSha(sha, { keys, arguments: args })) as Reply;
    } catch (error) {
      if (!(error instanceof Error)) throw error;
      // Redis says what went wrong in its reply's first word: a value of another type under one of
      // lockwarden's names, or one a script cannot read, is not lockwarden's, and no retry mends it.
      if (NOT_OURS.test(error.message))
        throw new CorruptLockStateError(lockKeyOf(keys[0]), [
          `Redis answered ${error.message.slice(0, 200)}`,
        ]);
      if (!error.message.startsWith('NOSCRIPT')) throw error;
      this.shas.delete(script);
      return this.run(script, keys, args);
    }
  }
}
