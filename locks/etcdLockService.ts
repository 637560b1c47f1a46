// The etcd backend: a lease key bound to an etcd lease, grants as transactions on its absence.
import { CorruptLockStateError } from '../policy/errors';
import { Etcd3, type IKeyValue, Range } from 'etcd3';
import {
  type AcquireAttempt,
  ABSOLUTE_MAX_TTL_MS,
  denial,
  type FencedActionResult,
  fencedTargetSchema,
  type FencedTarget,
  type Holding,
  type Lease,
  lockKeySchema,
  type ParsedTryAcquireRequest,
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
  queueOrder,
  type Ticket,
  waitersOf,
  withinRequesterLimit,
} from './grantRules';
import type { LockRecord, LockService, LockServiceLimits, LowLease, StalledQueue } from './lockService';
import {
  DEFAULT_MAX_KEYS_PER_REQUESTER,
  DEFAULT_MAX_WAITERS_PER_KEY,
  IDLE_KEY_RETENTION_MS,
} from '../policy/constants';
import { ETCD_CALL_DEADLINE_MS, etcdClientOptions, type TlsFiles } from './lockServiceTls';

/** Options of the etcd backend. */
interface EtcdLockServiceOptions extends LockServiceLimits {
  /** Client URLs, e.g. `http://127.0.0.1:2379` (`https://` for TLS). */
  hosts: string[];
  /** An RBAC user whose role covers the `lockwarden/` prefix. */
  auth?: { username: string; password: string };
  /** The server's CA, and a client certificate and key, for `https://` hosts. */
  files?: TlsFiles;
  /** Most keys one read of a whole prefix (every lease, every ticket) asks for at a time. */
  rangePage?: number;
}

/**
 * A page of a whole-prefix read. etcd's client refuses an answer over 4 MiB, and one refused read
 * opens its circuit breaker, failing every call for a while (renewals too). A read of 70,000
 * tickets' values was 10.2 MB, so one read of every lease or ticket failed from about 29,000 of them.
 * A page of 1,000 (a few hundred KB) stays far below.
 */
const RANGE_PAGE = 1_000;

// etcd grants lease TTLs in whole seconds and never below its own floor (about 1.5 x the election timeout).
const ETCD_MIN_TTL_S = 2;
/** Where the etcd backend keeps each key's lease, one etcd key per lock key. */
export const LEASE_PREFIX = 'lockwarden/lease/';
const WAIT_PREFIX = 'lockwarden/wait/';
const TOKEN_PREFIX = 'lockwarden/token/';
const leaseKeyOf = (key: string) => LEASE_PREFIX + encodeURIComponent(key);
const waitPrefixOf = (key: string) => `${WAIT_PREFIX}${encodeURIComponent(key)}/`;
// Written by every grant (its mod revision is then the newest token issued for the key), on the
// lease's etcd lease; a release writes it again with that token as its value, on a retention lease.
const tokenMarkerOf = (key: string) => TOKEN_PREFIX + encodeURIComponent(key);
const ticketKeyOf = (key: string, requester: string) => waitPrefixOf(key) + encodeURIComponent(requester);
// One key per key a requester holds or waits for, on the same etcd lease as the lease or the ticket,
// so it goes with them: counted against the requester's limit.
const REQUESTER_PREFIX = 'lockwarden/requester/';
const requesterPrefixOf = (requester: string) => `${REQUESTER_PREFIX}${encodeURIComponent(requester)}/`;
const requesterMarkOf = (requester: string, key: string) =>
  requesterPrefixOf(requester) + encodeURIComponent(key);

/** What a lease key holds. */
export interface LeaseValue {
  holder: string;
  ttlMs: number;
  grantedAt: number;
  /** tryAcquire's `owner`, when the request named one. */
  owner?: string;
}

/**
 * The etcd backend. A lease is a key bound to an etcd lease, so etcd itself expires it on its own
 * clock; the fencing token is the key's create revision, which etcd never reuses (also across
 * restarts, since revisions are persisted in its log, and after a key's records are gone). Every
 * record lives on an etcd lease, so etcd forgets an idle key by itself: the lease key and the token
 * marker with the lease (the marker a retention longer after a release), a ticket with its own. A waiter's ticket is a key bound to a lease of
 * its own, so a dead waiter's ticket vanishes when that lease runs out. Grants are transactions that
 * succeed only if the lease key is still absent. etcd has no clock API: the deadlines and service
 * times this backend reports are the worker's estimate of etcd's decision, which etcd alone enforces,
 * and TTLs are rounded up to whole seconds (at least 2 s).
 */
export class EtcdLockService implements LockService {
  readonly backend = 'etcd';
  readonly minTtlMs = ETCD_MIN_TTL_S * 1000;
  private readonly client: Etcd3;
  private readonly maxTtlMs: number;
  private readonly rangePage: number;
  /** Seconds a released key's token marker is kept; 0: for ever, as 0.1.0 kept it. */
  private readonly retentionS: number;
  private readonly maxWaitersPerKey: number;
  private readonly maxKeysPerRequester: number;
  /** The etcd lease released keys' token markers live on, and when this worker took it. */
  private retention: { id: string; grantedAt: number } | null = null;

  constructor(options: EtcdLockServiceOptions) {
    this.client = new Etcd3(etcdClientOptions(options));
    this.maxTtlMs = options.maxTtlMs ?? ABSOLUTE_MAX_TTL_MS;
    this.rangePage = options.rangePage ?? RANGE_PAGE;
    this.maxWaitersPerKey = options.maxWaitersPerKey ?? DEFAULT_MAX_WAITERS_PER_KEY;
    this.maxKeysPerRequester = options.maxKeysPerRequester ?? DEFAULT_MAX_KEYS_PER_REQUESTER;
    const retentionMs = options.idleKeyRetentionMs ?? IDLE_KEY_RETENTION_MS;
    this.retentionS = retentionMs === 0 ? 0 : Math.max(ETCD_MIN_TTL_S, Math.ceil(retentionMs / 1000));
  }

  async tryAcquire(input: TryAcquireRequest): Promise<AcquireAttempt> {
    const request = parseTryAcquire(input, this.maxTtlMs);
    // A lost race (another grant between our read and our transaction) is read again; a key that
    // keeps changing hands under us is, for this attempt, held by someone else.
    for (let round = 0; round < 3; round++) {
      const attempt = await this.attempt(request);
      if (attempt !== 'raced') return attempt;
    }
    const current = await this.readLease(request.key);
    return {
      granted: false,
      denial: denial('HELD', {
        holder: current?.value.holder ?? null,
        holderLeaseUntil: current ? current.value.grantedAt + current.value.ttlMs : null,
        waiters: (await this.ticketsOf(request.key)).filter((t) => t.requester !== request.requester).length,
        position: await this.position({ key: request.key, requester: request.requester }),
        serviceTime: Date.now(),
      }),
    };
  }

  async inspect(key: string): Promise<LockRecord> {
    parseOrThrow(lockKeySchema, key, 'lock key');
    const now = Date.now();
    const [current, tickets, lastToken] = await Promise.all([
      this.readLease(key),
      this.ticketsOf(key),
      this.lastToken(key),
    ]);
    return {
      key,
      holder: current?.value.holder ?? null,
      token: current?.kv.create_revision ?? null,
      leaseUntil: current ? await this.estimateDeadline(current.kv) : null,
      lastToken,
      ...waitersOf(tickets),
      serviceTime: now,
    };
  }

  async renew(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'renew request');
    const now = Date.now();
    const current = await this.readLease(target.key);
    const refusal = this.checkOwner(current, target, now);
    if (refusal) return refusal;
    const ttl = await this.keepAliveOnce(current!.kv.lease);
    if (ttl <= 0) return { ok: false, reason: 'expired', serviceTime: now };
    return { ok: true, serviceTime: now, leaseUntil: now + ttl * 1000 };
  }

  async release(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'release request');
    const now = Date.now();
    const current = await this.readLease(target.key);
    const refusal = this.checkOwner(current, target, now);
    if (refusal) return refusal;
    const leaseKey = leaseKeyOf(target.key);
    const release = async (retentionLease: string | null) =>
      this.client
        .if(leaseKey, 'Mod', '==', current!.kv.mod_revision)
        .then(
          this.client.delete().key(leaseKey),
          // Rewritten here, so its revision moves on: the token goes in its value. With every key
          // kept for ever (no retention lease), the grant's marker stays as 0.1.0 left it.
          ...(retentionLease === null
            ? []
            : [
                this.client
                  .put(tokenMarkerOf(target.key))
                  .value(current!.kv.create_revision)
                  .lease(retentionLease),
              ]),
        )
        .commit();
    const retained = async () => (this.retentionS === 0 ? null : this.retentionLease());
    // A retention lease that etcd no longer has (its TTL ran out early, etcd restarted) is taken anew.
    const txn = await release(await retained()).catch(async (error: unknown) => {
      if (!/lease not found/i.test(String(error))) throw error;
      this.retention = null;
      return release(await retained());
    });
    if (!txn.succeeded) return { ok: false, reason: 'stale-token', serviceTime: now };
    await this.client.leaseClient.leaseRevoke({ ID: current!.kv.lease }).catch(() => undefined);
    return { ok: true, serviceTime: now };
  }

  async position(input: WaiterRef): Promise<number | null> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    const index = (await this.ticketsOf(key)).findIndex((t) => t.requester === requester);
    return index < 0 ? null : index + 1;
  }

  async leave(input: WaiterRef): Promise<void> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    // The requester's mark goes too, unless it holds the key (then the mark is its lease's).
    const held = (await this.readLease(key))?.value.holder === requester;
    // The ticket's own etcd lease goes with it, rather than outlive it for the ticket's hour.
    const ticket = (await this.client.get(ticketKeyOf(key, requester)).exec()).kvs[0];
    if (ticket && ticket.lease !== '0')
      await this.client.leaseClient.leaseRevoke({ ID: ticket.lease }).catch(() => undefined);
    await this.client.delete().key(ticketKeyOf(key, requester));
    if (!held) await this.client.delete().key(requesterMarkOf(requester, key));
  }

  async holdings(): Promise<Holding[]> {
    const kvs = (await this.everyKeyUnder(LEASE_PREFIX)).filter(storedByUs);
    return Promise.all(
      kvs.map(async (kv) => {
        const value = storedJson<LeaseValue>(kv);
        return {
          key: decodeURIComponent(kv.key.toString().slice(LEASE_PREFIX.length)),
          holder: value.holder,
          token: kv.create_revision,
          leaseUntil: await this.estimateDeadline(kv),
          owner: value.owner ?? null,
        };
      }),
    );
  }

  async waits(): Promise<Wait[]> {
    const kvs = (await this.everyKeyUnder(WAIT_PREFIX)).filter(storedByUs);
    const byKey = new Map<string, IKeyValue[]>();
    for (const kv of kvs) {
      const [encodedKey] = kv.key.toString().slice(WAIT_PREFIX.length).split('/');
      const key = decodeURIComponent(encodedKey!);
      byKey.set(key, [...(byKey.get(key) ?? []), kv]);
    }
    return [...byKey].flatMap(([key, list]) =>
      ticketsFrom(list).map((t, i) => ({
        key,
        requester: t.requester,
        position: i + 1,
        owner: t.owner ?? null,
      })),
    );
  }

  /**
   * etcd has no index of a prefix's distinct keys, so this reads every ticket and every lease (a page
   * at a time), then the tickets of the keys no lease holds: the one backend where a sweep's cost
   * follows the waiters (bench/queueCost.ts measures it).
   */
  async stalledQueues(): Promise<StalledQueue[]> {
    const names = async (prefix: string) => (await this.everyKeyUnder(prefix)).map((kv) => kv.key.toString());
    const [ticketNames, leaseNames] = await Promise.all([names(WAIT_PREFIX), names(LEASE_PREFIX)]);
    const held = new Set(leaseNames.map((name) => name.slice(LEASE_PREFIX.length)));
    const free = new Set(
      ticketNames.map((name) => name.slice(WAIT_PREFIX.length).split('/')[0]!).filter((k) => !held.has(k)),
    );
    const queues = await Promise.all(
      [...free].map(async (encoded) => {
        const key = decodeURIComponent(encoded);
        return { key, waiters: (await this.ticketsOf(key)).map((t) => t.requester) };
      }),
    );
    return queues.filter((q) => q.waiters.length > 0);
  }

  /**
   * etcd keeps a lease's remaining time in the lease itself, not in the key: this asks each held
   * lease for it, one call per holder (whole seconds, rounded down), so on etcd the sweep's cost follows the holders.
   */
  async leasesRunningLow(fractionLeft: number): Promise<LowLease[]> {
    const fraction = parseOrThrow(fractionLeftSchema, fractionLeft, 'leasesRunningLow fraction');
    const kvs = (await this.everyKeyUnder(LEASE_PREFIX)).filter(storedByUs);
    const now = Date.now();
    const leases = await Promise.all(
      kvs.map(async (kv): Promise<LowLease> => {
        const value = storedJson<LeaseValue>(kv);
        // Whole seconds, rounded down (0: under a second left); -1 once the lease has gone.
        const { TTL } = await this.client.leaseClient.leaseTimeToLive({ ID: kv.lease });
        const remainingMs = Number(TTL) * 1000;
        return {
          key: decodeURIComponent(kv.key.toString().slice(LEASE_PREFIX.length)),
          holder: value.holder,
          token: kv.create_revision,
          leaseUntil: now + remainingMs,
          ttlMs: value.ttlMs,
          remainingMs,
        };
      }),
    );
    return leases.filter((l) => l.remainingMs >= 0 && l.remainingMs < l.ttlMs * fraction);
  }

  /** etcd forgets by itself: every record lockwarden writes lives on an etcd lease. */
  async forgetIdleKeys(): Promise<number> {
    return 0;
  }

  async close(): Promise<void> {
    this.client.close();
  }

  /**
   * One etcd lease for the token markers of the keys this worker releases, taken anew once half its
   * TTL has passed: a marker lives from half the retention to the whole of it past its release, for
   * one lease grant per half retention rather than one per release.
   */
  private async retentionLease(): Promise<string> {
    const halfMs = (this.retentionS * 1000) / 2;
    if (this.retention && Date.now() - this.retention.grantedAt < halfMs) return this.retention.id;
    const grantedAt = Date.now();
    const { ID } = await this.client.leaseClient.leaseGrant({ TTL: this.retentionS });
    this.retention = { id: ID, grantedAt };
    return ID;
  }

  private async attempt(request: ParsedTryAcquireRequest): Promise<AcquireAttempt | 'raced'> {
    const now = Date.now();
    const [current, tickets] = await Promise.all([this.readLease(request.key), this.ticketsOf(request.key)]);
    // etcd deletes an expired lease key itself, so a present key is a live lease.
    let step = decideGrant(
      {
        now,
        holder: current?.value.holder ?? null,
        leaseUntil: current ? Number.POSITIVE_INFINITY : null,
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
      // A count, not the names (10,000 of them could pass the client's 4 MiB): a requester with no
      // ticket and no lease here has no mark here either (a mark lives and goes with one).
      const elsewhere = await this.client.getAll().prefix(requesterPrefixOf(request.requester)).count();
      step = withinRequesterLimit(step, elsewhere, this.maxKeysPerRequester);
    }
    if (step.kind === 'return-existing')
      return { granted: true, lease: this.leaseFrom(request.key, current!) };
    if (step.kind === 'grant') {
      const ttlS = Math.max(ETCD_MIN_TTL_S, Math.ceil(request.ttlMs / 1000));
      const { ID } = await this.client.leaseClient.leaseGrant({ TTL: ttlS });
      const leaseKey = leaseKeyOf(request.key);
      const value: LeaseValue = {
        holder: request.requester,
        ttlMs: ttlS * 1000,
        grantedAt: now,
        ...(request.owner ? { owner: request.owner } : {}),
      };
      const txn = await this.client
        .if(leaseKey, 'Create', '==', 0)
        .then(
          this.client.put(leaseKey).value(JSON.stringify(value)).lease(ID),
          this.retentionS === 0
            ? this.client.put(tokenMarkerOf(request.key)).value('')
            : this.client.put(tokenMarkerOf(request.key)).value('').lease(ID),
          this.client.put(requesterMarkOf(request.requester, request.key)).value('').lease(ID),
          this.client.delete().key(ticketKeyOf(request.key, request.requester)),
        )
        .commit();
      if (!txn.succeeded) {
        await this.client.leaseClient.leaseRevoke({ ID }).catch(() => undefined);
        return 'raced';
      }
      // The ticket's own etcd lease is empty now (its key deleted, the requester's mark moved onto
      // the grant's lease): revoked, not left to its hour, or every hand-off would leave a lease
      // behind in etcd for the ticket's hour.
      const ticketLease = tickets.find((t) => t.requester === request.requester)?.lease;
      if (ticketLease) await this.client.leaseClient.leaseRevoke({ ID: ticketLease }).catch(() => undefined);
      return grantedAttempt(request, txn.header.revision, now);
    }
    if (step.keepTicket) await this.keepTicket(request, tickets);
    const live = current
      ? { holder: current.value.holder, leaseUntil: await this.estimateDeadline(current.kv) }
      : null;
    return deniedAttempt(step, now, live);
  }

  // A ticket is a key on a lease of its own: renewing the ticket is a keep-alive of that lease.
  private async keepTicket(
    request: ParsedTryAcquireRequest,
    tickets: (Ticket & { lease?: string })[],
  ): Promise<void> {
    const mine = tickets.find((t) => t.requester === request.requester);
    if (mine?.lease && (await this.keepAliveOnce(mine.lease)) > 0) return;
    const { ID } = await this.client.leaseClient.leaseGrant({ TTL: Math.ceil(request.queueTicketMs / 1000) });
    const ticketKey = ticketKeyOf(request.key, request.requester);
    const txn = await this.client
      .if(ticketKey, 'Create', '==', 0)
      .then(
        this.client
          .put(ticketKey)
          // `since` is the worker's estimate of etcd's time, as every time this backend reports.
          .value(JSON.stringify({ priority: request.priority, since: Date.now(), owner: request.owner }))
          .lease(ID),
        this.client.put(requesterMarkOf(request.requester, request.key)).value('').lease(ID),
      )
      .commit();
    if (!txn.succeeded) await this.client.leaseClient.leaseRevoke({ ID }).catch(() => undefined);
  }

  // etcd deletes an expired lease key itself: a lease read here is live, so expiry needs no check.
  private checkOwner(
    current: { kv: IKeyValue; value: LeaseValue } | null,
    target: FencedTarget,
    now: number,
  ) {
    const [holder, token] = [current?.value.holder ?? null, current?.kv.create_revision ?? null];
    return ownerRefusal(holder, token, Number.POSITIVE_INFINITY, target, now);
  }

  /**
   * Every key under `prefix`, a page at a time (RANGE_PAGE), all pages read at the first page's
   * revision: the same snapshot one read would give, as long as etcd has not compacted it meanwhile
   * (then the read fails, and the caller's next sweep reads again).
   */
  private async everyKeyUnder(prefix: string): Promise<IKeyValue[]> {
    const { end } = Range.prefix(prefix);
    const kvs: IKeyValue[] = [];
    let start = Buffer.from(prefix);
    let revision: string | undefined;
    for (;;) {
      const read = this.client.getAll().inRange(new Range(start, end)).limit(this.rangePage);
      const page = await (revision ? read.revision(revision) : read).exec();
      revision ??= page.header.revision;
      kvs.push(...page.kvs);
      if (!page.more || page.kvs.length === 0) return kvs;
      // The next page starts just past the last key read.
      start = Buffer.concat([page.kvs[page.kvs.length - 1]!.key, Buffer.from([0])]);
    }
  }

  private async readLease(key: string): Promise<{ kv: IKeyValue; value: LeaseValue } | null> {
    const kv = (await this.client.get(leaseKeyOf(key)).exec()).kvs[0];
    return kv ? { kv, value: storedJson<LeaseValue>(kv) } : null;
  }

  private async ticketsOf(key: string): Promise<(Ticket & { lease: string })[]> {
    return ticketsFrom(await this.everyKeyUnder(waitPrefixOf(key)));
  }

  private async lastToken(key: string): Promise<string | null> {
    const kv = (await this.client.get(tokenMarkerOf(key)).exec()).kvs[0];
    if (!kv) return null;
    // A held key's marker was written by its grant (its revision is the token); a released key's
    // names the token in its value.
    return kv.value.length > 0 ? kv.value.toString() : kv.mod_revision;
  }

  private leaseFrom(key: string, current: { kv: IKeyValue; value: LeaseValue }): Lease {
    return {
      key,
      holder: current.value.holder,
      token: current.kv.create_revision,
      leaseUntil: current.value.grantedAt + current.value.ttlMs,
      grantedAt: current.value.grantedAt,
    };
  }

  private async estimateDeadline(kv: IKeyValue): Promise<number> {
    const { TTL } = await this.client.leaseClient.leaseTimeToLive({ ID: kv.lease });
    return Date.now() + Math.max(0, Number(TTL)) * 1000;
  }

  /**
   * One keep-alive, answered or failed within ETCD_CALL_DEADLINE_MS. etcd3 gives streams no deadline
   * (its watches live for hours), and a keep-alive on a connection that went silent, or a stream
   * etcd ended without an answer, would otherwise wait forever, and with it the sweep that asked:
   * every stalled queue and silent lease after it would go unserved (the cluster campaign's hang).
   */
  private async keepAliveOnce(leaseId: string): Promise<number> {
    const stream = await this.client.leaseClient.leaseKeepAlive({
      deadline: Date.now() + ETCD_CALL_DEADLINE_MS,
    });
    try {
      return await new Promise<number>((resolve, reject) => {
        stream.on('data', (response: { TTL: string }) => resolve(Number(response.TTL)));
        stream.on('error', reject);
        stream.on('end', () => reject(new Error(`etcd ended the keep-alive of lease ${leaseId} unanswered`)));
        stream.write({ ID: leaseId });
      });
    } finally {
      stream.end();
    }
  }
}

function ticketsFrom(kvs: IKeyValue[]): (Ticket & { lease: string })[] {
  return sinceInArrivalOrder(
    kvs
      .map((kv) => {
        const value = storedJson<{ priority: number; since?: number; owner?: string }>(kv);
        return {
          requester: decodeURIComponent(kv.key.toString().split('/').pop()!),
          priority: value.priority,
          seq: Number(kv.create_revision),
          expiresAt: Number.POSITIVE_INFINITY,
          since: value.since ?? null,
          owner: value.owner ?? null,
          lease: kv.lease,
        };
      })
      .sort(queueOrder),
  );
}

/**
 * A ticket's `since` is its worker's clock, read before the transaction that creates the ticket, and
 * two waiters that queue at once may commit in the other order. The revision is the order in which
 * etcd took them, so a ticket never reads as having queued before one of its priority that etcd took
 * first: its time is that one's, and the fairness monitor sees no overtaking that did not happen.
 */
function sinceInArrivalOrder<T extends Ticket>(queue: T[]): T[] {
  const latest = new Map<number, number>();
  return queue.map((ticket) => {
    const own = ticket.since;
    if (own === null || own === undefined) return ticket;
    const since = Math.max(own, latest.get(ticket.priority) ?? own);
    latest.set(ticket.priority, since);
    return { ...ticket, since };
  });
}

/**
 * A value lockwarden stored under one of its etcd keys, parsed; one that is not JSON was written by
 * something else, and is a CorruptLockState failure naming the lock key, not a crash.
 */
function storedJson<T>(kv: IKeyValue): T {
  try {
    return JSON.parse(kv.value.toString()) as T;
  } catch {
    const name =
      kv.key
        .toString()
        .replace(/^lockwarden\/[a-z]+\//, '')
        .split('/')[0] ?? '';
    throw new CorruptLockStateError(safeDecode(name), ['its stored value is not JSON']);
  }
}

/**
 * Whether a value is one lockwarden could have stored (JSON). A list read (every holding, every
 * ticket) leaves the others out rather than fail for everyone; a read of that key still refuses it.
 */
function storedByUs(kv: IKeyValue): boolean {
  try {
    JSON.parse(kv.value.toString());
    return true;
  } catch {
    return false;
  }
}

function safeDecode(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}
