// The ZooKeeper backend: a lease is a node on Curator's InterProcessMutex path, its token the zxid that
// created it, its deadline the node's mtime (ZooKeeper's clock) plus its TTL.
import { CreateMode } from 'node-zookeeper-client';
import {
  type AcquireAttempt,
  ABSOLUTE_MAX_TTL_MS,
  denial,
  type FencedActionResult,
  fencedTargetSchema,
  type FencedTarget,
  type Holding,
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
import { statTime, ZK, zkCode, ZkSession } from './zookeeperSession';
import {
  deadlineOf,
  holderOf,
  json,
  lastTokenOf,
  layoutOf,
  type LeaseData,
  type Leased,
  type LockRead,
  outsiderName,
  readLock,
  listTickets,
  readTicket,
  readTickets,
  type TicketName,
  ticketNamePrefix,
  tokenOf,
  type ZkLayout,
  unlessCorrupt,
  type ZkTicket,
} from './zookeeperLayout';
import { forgetIdle } from './zookeeperForget';
import { dropMark, keysEngaged } from './zookeeperMarks';

/** Options of the ZooKeeper backend. */
export interface ZookeeperLockServiceOptions extends LockServiceLimits {
  /** `host:port[,host:port...]`, as ZooKeeper's own clients take it. */
  connectString: string;
  /** The root of lockwarden's nodes (the URL's path), e.g. `/lockwarden`. */
  root: string;
}

// The errors a transaction fails with when something it was conditioned on changed under it.
const RACED = new Set<number>([ZK.NO_NODE, ZK.NODE_EXISTS, ZK.BAD_VERSION]);
const raced = (error: unknown) => RACED.has(zkCode(error) ?? 0);
// Reads and decisions one tryAcquire makes before it answers HELD to a key that keeps changing.
const ATTEMPT_ROUNDS = 5;

/**
 * The ZooKeeper backend. Every node is persistent: a lease lives as long as its holder keeps renewing
 * it, not as long as one worker's connection. The token is the creating zxid, which ZooKeeper never
 * reuses (its epoch rises with every leader, and it is logged before it is answered), so tokens rise
 * across restarts, leader changes and forgotten keys. The key's lock node's version orders every
 * change of its lease (grant, release, a lapsed lease removed): each is a transaction conditioned on
 * it. Deadlines and service times are ZooKeeper's: each operation first writes a clock node and
 * reads the mtime the leader gave that write.
 */
export class ZookeeperLockService implements LockService {
  readonly backend = 'zookeeper';
  readonly minTtlMs = 1;
  private readonly zk: ZkSession;
  private readonly layout: ZkLayout;
  private readonly maxTtlMs: number;
  private readonly retentionMs: number;
  private readonly maxWaitersPerKey: number;
  private readonly maxKeysPerRequester: number;
  private ready: Promise<void> | null = null;

  constructor(options: ZookeeperLockServiceOptions) {
    this.zk = new ZkSession(options.connectString);
    this.layout = layoutOf(options.root);
    this.maxTtlMs = options.maxTtlMs ?? ABSOLUTE_MAX_TTL_MS;
    this.retentionMs = options.idleKeyRetentionMs ?? IDLE_KEY_RETENTION_MS;
    this.maxWaitersPerKey = options.maxWaitersPerKey ?? DEFAULT_MAX_WAITERS_PER_KEY;
    this.maxKeysPerRequester = options.maxKeysPerRequester ?? DEFAULT_MAX_KEYS_PER_REQUESTER;
  }

  async tryAcquire(input: TryAcquireRequest): Promise<AcquireAttempt> {
    const request = parseTryAcquire(input, this.maxTtlMs);
    // A transaction another change beat is read and decided again; a key that keeps changing under
    // us is, for this attempt, held by someone else (as etcd's backend answers).
    for (let round = 0; round < ATTEMPT_ROUNDS; round++) {
      const attempt = await this.attempt(request);
      if (attempt !== 'raced') return attempt;
    }
    const record = await this.inspect(request.key);
    return {
      granted: false,
      denial: denial('HELD', {
        holder: record.holder,
        holderLeaseUntil: record.leaseUntil,
        waiters: record.waiters.filter((w) => w !== request.requester).length,
        position: record.waiters.includes(request.requester)
          ? record.waiters.indexOf(request.requester) + 1
          : null,
        serviceTime: record.serviceTime,
      }),
    };
  }

  async inspect(key: string): Promise<LockRecord> {
    parseOrThrow(lockKeySchema, key, 'lock key');
    const now = await this.clock();
    const [read, tickets] = await Promise.all([this.readLock(key), this.readTickets(key)]);
    const { holder } = holderOf(read, now);
    return {
      key,
      holder: holder ? holderName(holder) : null,
      token: holder?.lease ? tokenOf(holder) : null,
      leaseUntil: holder?.lease ? deadlineOf(holder as Leased) : null,
      lastToken: lastTokenOf(read),
      ...waitersOf(tickets.filter((t) => t.expiresAt > now)),
      serviceTime: now,
    };
  }

  async renew(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'renew request');
    for (;;) {
      const now = await this.clock();
      const read = await this.readLock(target.key);
      const judged = judge(read, target, now);
      if ('refusal' in judged) return judged.refusal;
      const { lease } = judged;
      try {
        // The version read above: a renewal lands only on the lease it judged live, so no grant can
        // come between (a grant removes a lapsed lease at the version it read).
        const stat = await this.zk.setData(lease.path, json(lease.lease), lease.stat.version);
        return { ok: true, serviceTime: now, leaseUntil: statTime(stat.mtime) + lease.lease.ttlMs };
      } catch (error) {
        if (!raced(error)) throw error;
      }
    }
  }

  async release(input: FencedTarget): Promise<FencedActionResult> {
    const target = parseOrThrow(fencedTargetSchema, input, 'release request');
    for (;;) {
      const now = await this.clock();
      const [read, tickets] = await Promise.all([this.readLock(target.key), this.listTickets(target.key)]);
      const judged = judge(read, target, now);
      if ('refusal' in judged) return judged.refusal;
      const { lease } = judged;
      try {
        await this.zk.multi(`release of ${target.key}`, (tx) => {
          tx.remove(lease.path, lease.stat.version);
          tx.setData(
            this.layout.lockPath(target.key),
            json({ lastToken: tokenOf(lease) }),
            read.stat!.version,
          );
        });
      } catch (error) {
        if (raced(error)) continue;
        throw error;
      }
      if (!tickets.some((t) => t.requester === target.holder)) await this.dropMark(target.holder, target.key);
      return { ok: true, serviceTime: now };
    }
  }

  async position(input: WaiterRef): Promise<number | null> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    const now = await this.clock();
    const names = await this.listTickets(key);
    const mine = names.find((t) => t.requester === requester);
    const read = mine ? await readTicket(this.zk, key, mine) : null;
    if (!read || read.expiresAt <= now) return null;
    // Those ahead by name: a lapsed one still counts until a grant or the sweep removes it.
    return names.filter((t) => t.requester !== requester && queueOrder(t, read) < 0).length + 1;
  }

  async leave(input: WaiterRef): Promise<void> {
    const { key, requester } = parseOrThrow(waiterSchema, input, 'waiter');
    const read = await this.readLock(key);
    for (const ticket of await this.listTickets(key))
      if (ticket.requester === requester) await this.zk.removeIfAny(ticket.path);
    // The requester's mark goes too, unless it holds the key.
    if (!read.children.some((c) => c.lease?.holder === requester)) await this.dropMark(requester, key);
    await this.zk.removeIfAny(this.layout.queuePath(key)).catch(() => undefined);
  }

  async holdings(): Promise<Holding[]> {
    const now = await this.clock();
    const held = await this.everyLiveLease(now);
    return held.map(({ key, lease }) => ({
      key,
      holder: lease.lease.holder,
      token: tokenOf(lease),
      leaseUntil: deadlineOf(lease),
      owner: lease.lease.owner ?? null,
    }));
  }

  async waits(): Promise<Wait[]> {
    const now = await this.clock();
    const keys = await this.keysUnder(this.layout.waits);
    const queues = await Promise.all(
      keys.map(async (key) => ({
        key,
        tickets: (await unlessCorrupt(() => this.readTickets(key), [])).filter((t) => t.expiresAt > now),
      })),
    );
    return queues.flatMap(({ key, tickets }) =>
      tickets.map((t, i) => ({ key, requester: t.requester, position: i + 1, owner: t.owner ?? null })),
    );
  }

  /** Reads every queued key's lock, then the tickets of those no one holds (never a held key's waiters). */
  async stalledQueues(): Promise<StalledQueue[]> {
    const now = await this.clock();
    const keys = await this.keysUnder(this.layout.waits);
    const queues = await Promise.all(
      keys.map(async (key) => {
        if (holderOf(await this.readLock(key), now).holder) return null;
        const live = (await unlessCorrupt(() => this.readTickets(key), [])).filter((t) => t.expiresAt > now);
        return live.length > 0 ? { key, waiters: live.map((t) => t.requester) } : null;
      }),
    );
    return queues.filter((q) => q !== null);
  }

  async leasesRunningLow(fractionLeft: number): Promise<LowLease[]> {
    const fraction = parseOrThrow(fractionLeftSchema, fractionLeft, 'leasesRunningLow fraction');
    const now = await this.clock();
    const held = await this.everyLiveLease(now);
    return held
      .map(({ key, lease }): LowLease => {
        const leaseUntil = deadlineOf(lease);
        return {
          key,
          holder: lease.lease.holder,
          token: tokenOf(lease),
          leaseUntil,
          ttlMs: lease.lease.ttlMs,
          remainingMs: leaseUntil - now,
        };
      })
      .filter((l) => l.remainingMs < l.ttlMs * fraction);
  }

  async forgetIdleKeys(): Promise<number> {
    const now = await this.clock();
    return forgetIdle({
      zk: this.zk,
      layout: this.layout,
      now,
      retentionMs: this.retentionMs,
      keys: [
        ...new Set([
          ...(await this.keysUnder(this.layout.locks)),
          ...(await this.keysUnder(this.layout.waits)),
        ]),
      ],
      dropMark: (requester, key) => this.dropMark(requester, key),
    });
  }

  async close(): Promise<void> {
    this.zk.close();
  }

  private async attempt(request: ParsedTryAcquireRequest): Promise<AcquireAttempt | 'raced'> {
    const now = await this.clock();
    const [read, names, markStat] = await Promise.all([
      this.readLock(request.key),
      this.listTickets(request.key),
      this.zk.exists(this.layout.markPath(request.requester, request.key)),
    ]);
    const { holder, lapsed } = holderOf(read, now);
    const mineByName = names.find((t) => t.requester === request.requester);
    const mine = mineByName ? await readTicket(this.zk, request.key, mineByName) : null;
    const queue = await this.queueAsSeen(request, names, mine, holder === null, now);
    let step = decideGrant(
      {
        now,
        holder: holder ? holderName(holder) : null,
        // An outsider (a Curator client) holds until it deletes its node: no deadline of ours.
        leaseUntil: holder ? (holder.lease ? deadlineOf(holder as Leased) : Number.POSITIVE_INFINITY) : null,
        tickets: queue.tickets,
        maxWaiters: this.maxWaitersPerKey,
      },
      request,
    );
    const mineLive = mine !== null && mine.expiresAt > now;
    if (engagesAfresh(step, mineLive)) {
      const elsewhere = await keysEngaged(this.zk, this.layout, {
        requester: request.requester,
        key: request.key,
        markedHere: markStat !== null,
        max: this.maxKeysPerRequester,
        now: () => this.clock(),
      });
      step = withinRequesterLimit(step, elsewhere, this.maxKeysPerRequester);
    }
    if (step.kind === 'return-existing') {
      const lease = holder as Leased;
      return {
        granted: true,
        lease: {
          key: request.key,
          holder: lease.lease.holder,
          token: tokenOf(lease),
          leaseUntil: deadlineOf(lease),
          grantedAt: statTime(lease.stat.ctime),
        },
      };
    }
    if (step.kind === 'grant')
      return this.grant(request, {
        read,
        lapsed,
        mine,
        lapsedTickets: queue.lapsed,
        markStat: markStat !== null,
      });
    if (step.keepTicket && !(await this.keepTicket(request, mine, markStat !== null, now))) return 'raced';
    const denied = deniedAttempt(step, now, null);
    if (!denied.granted && holder) {
      denied.denial.holder = holderName(holder);
      denied.denial.holderLeaseUntil = holder.lease ? deadlineOf(holder as Leased) : null;
    }
    return denied;
  }

  /**
   * The queue as the grant rules need it, read no further than they look: every other ticket by its
   * name (taken as live), the requester's own as read, and, when the key is free, the tickets ahead of
   * the requester read in order until one is live (the lapsed ones left out, to be removed by the
   * grant). A waiter behind a live head decides on one read, however long the queue.
   */
  private async queueAsSeen(
    request: ParsedTryAcquireRequest,
    names: TicketName[],
    mine: ZkTicket | null,
    free: boolean,
    now: number,
  ): Promise<{ tickets: Ticket[]; lapsed: ZkTicket[] }> {
    const others = names.filter((t) => t.requester !== request.requester);
    const mineLive = mine !== null && mine.expiresAt > now;
    const lapsed: ZkTicket[] = [];
    const gone = new Set<TicketName>();
    if (free) {
      const ahead = mineLive ? others.filter((t) => queueOrder(t, mine) < 0) : others;
      for (const name of ahead) {
        const ticket = await readTicket(this.zk, request.key, name);
        if (ticket && ticket.expiresAt > now) break;
        gone.add(name);
        if (ticket) lapsed.push(ticket);
      }
    }
    const tickets: Ticket[] = others
      .filter((t) => !gone.has(t))
      .map((t) => ({ ...t, expiresAt: Number.POSITIVE_INFINITY }));
    return { tickets: mine ? [...tickets, mine] : tickets, lapsed };
  }

  /**
   * One transaction: the lapsed leases and tickets removed, the lock node's version moved on (so any
   * other change of the key fails), the lease node created and the requester's mark made. Then
   * Curator's test: the lease holds only if its node sorts first (then the requester's ticket goes);
   * a Curator client that created its node before our transaction is ahead of it, and our node is
   * removed again.
   */
  private async grant(
    request: ParsedTryAcquireRequest,
    seen: {
      read: LockRead;
      lapsed: Leased[];
      mine: ZkTicket | null;
      lapsedTickets: ZkTicket[];
      markStat: boolean;
    },
  ): Promise<AcquireAttempt | 'raced'> {
    const { key, requester } = request;
    const lockPath = this.layout.lockPath(key);
    const lease: LeaseData = {
      lockwarden: 1,
      holder: requester,
      ttlMs: request.ttlMs,
      ...(request.owner ? { owner: request.owner } : {}),
    };
    if (!seen.markStat) await this.zk.mkdirp(this.layout.requesterPath(requester));
    // A Curator client creates the parents it needs as containers, which ZooKeeper removes once empty.
    if (!seen.read.stat) await this.zk.mkdirp(this.layout.locks);
    let results;
    try {
      results = await this.zk.multi(`grant of ${key}`, (tx) => {
        for (const old of seen.lapsed) tx.remove(old.path, old.stat.version);
        if (seen.read.stat)
          tx.setData(
            lockPath,
            json({ lastToken: lastTokenOf(seen.read) ?? undefined }),
            seen.read.stat.version,
          );
        else tx.create(lockPath, json({}), CreateMode.PERSISTENT);
        tx.create(this.layout.leaseNodePrefix(key), json(lease), CreateMode.PERSISTENT_SEQUENTIAL);
        for (const old of seen.lapsedTickets) tx.remove(old.path, old.version);
        if (!seen.markStat)
          tx.create(this.layout.markPath(requester, key), Buffer.alloc(0), CreateMode.PERSISTENT);
      });
    } catch (error) {
      if (raced(error)) return 'raced';
      throw error;
    }
    // The lease node's create follows the lapsed leases' removals and the key node's write.
    const created = results[seen.lapsed.length + 1]!.path!;
    // One read of the key's children gives both Curator's test and our node's zxid and mtime.
    const children = (await this.readLock(key)).children;
    const ours = children.find((c) => c.path === created);
    if (!ours) return 'raced';
    const token = tokenOf(ours);
    const grantedAt = statTime(ours.stat.mtime);
    if (children[0] === ours) {
      // The requester's ticket goes only now: had a Curator client been ahead, it would have kept
      // its place in the queue rather than queue again at the back.
      if (seen.mine) {
        await this.zk.removeIfAny(seen.mine.path);
        await this.zk.removeIfAny(this.layout.queuePath(key)).catch(() => undefined);
      }
      for (const old of seen.lapsedTickets) await this.dropMark(old.requester, key);
      return grantedAttempt(request, token, grantedAt);
    }
    // A Curator client is ahead: ours goes, its token recorded as issued; the requester keeps its ticket.
    await this.zk.multi(`withdrawal of ${key}`, (tx) => {
      tx.remove(created, -1);
      tx.setData(lockPath, json({ lastToken: token }), -1);
    });
    return 'raced';
  }

  /** Renews the requester's ticket (a write moves its mtime), or takes one; false when another change beat it. */
  private async keepTicket(
    request: ParsedTryAcquireRequest,
    mine: ZkTicket | null,
    markExists: boolean,
    now: number,
  ): Promise<boolean> {
    const { key, requester } = request;
    const data = json({
      ticketMs: request.queueTicketMs,
      ...(request.owner ? { owner: request.owner } : {}),
    });
    try {
      if (mine && mine.expiresAt > now) {
        await this.zk.setData(mine.path, data, mine.version);
        return true;
      }
      await this.zk.mkdirp(this.layout.queuePath(key));
      if (!markExists) await this.zk.mkdirp(this.layout.requesterPath(requester));
      await this.zk.multi(`ticket on ${key}`, (tx) => {
        // A lapsed ticket is taken anew, at the back: its place lapsed with it.
        if (mine) tx.remove(mine.path, mine.version);
        tx.create(
          `${this.layout.queuePath(key)}/${ticketNamePrefix(requester, request.priority)}`,
          data,
          CreateMode.PERSISTENT_SEQUENTIAL,
        );
        if (!markExists)
          tx.create(this.layout.markPath(requester, key), Buffer.alloc(0), CreateMode.PERSISTENT);
      });
      return true;
    } catch (error) {
      if (raced(error)) return false;
      throw error;
    }
  }

  private async dropMark(requester: string, key: string): Promise<void> {
    await dropMark(this.zk, this.layout, requester, key);
  }

  private async everyLiveLease(now: number): Promise<{ key: string; lease: Leased }[]> {
    const keys = await this.keysUnder(this.layout.locks);
    const held = await Promise.all(
      keys.map(async (key) => {
        const { holder } = holderOf(await this.readLock(key), now);
        return holder?.lease ? { key, lease: holder as Leased } : null;
      }),
    );
    return held.filter((h) => h !== null);
  }

  private async keysUnder(path: string): Promise<string[]> {
    await this.layoutReady();
    return ((await this.zk.getChildren(path))?.children ?? []).map((name) => decodeURIComponent(name));
  }

  private async readLock(key: string) {
    return readLock(this.zk, this.layout, key);
  }

  private async readTickets(key: string) {
    return readTickets(this.zk, this.layout, key);
  }

  private async listTickets(key: string) {
    return listTickets(this.zk, this.layout, key);
  }

  /**
   * ZooKeeper's time: a write to the clock node, whose mtime the leader sets from its own clock.
   * Reads made after it on this session see every change committed before it.
   */
  private async clock(): Promise<number> {
    await this.layoutReady();
    try {
      return statTime((await this.zk.setData(this.layout.clock, Buffer.alloc(0))).mtime);
    } catch (error) {
      if (zkCode(error) !== ZK.NO_NODE) throw error;
      // Someone removed lockwarden's root: it is made again.
      this.ready = null;
      await this.layoutReady();
      return statTime((await this.zk.setData(this.layout.clock, Buffer.alloc(0))).mtime);
    }
  }

  private layoutReady(): Promise<void> {
    this.ready ??= Promise.all(
      [this.layout.locks, this.layout.waits, this.layout.requesters, this.layout.clock].map((p) =>
        this.zk.mkdirp(p),
      ),
    ).then(
      () => undefined,
      (error: unknown) => {
        this.ready = null;
        throw error;
      },
    );
    return this.ready;
  }
}

/** A lock child as a holder is named: a lockwarden lease by its holder, an outsider by its node. */
function holderName(child: { lease: LeaseData | null; name: string } & object): string {
  return child.lease ? child.lease.holder : outsiderName(child as Parameters<typeof outsiderName>[0]);
}

/**
 * The lease a fenced action names, or why it is refused: the lease node with the target's token if
 * it is the target holder's, judged live and the key's holder on ZooKeeper's clock; else the key's
 * holder compared with the target (not-holder, stale-token).
 */
function judge(
  read: LockRead,
  target: FencedTarget,
  now: number,
): { lease: Leased } | { refusal: Extract<FencedActionResult, { ok: false }> } {
  const named = read.children.find(
    (c) => c.lease?.holder === target.holder && tokenOf(c) === target.token,
  ) as Leased | undefined;
  const { holder } = holderOf(read, now);
  if (named && deadlineOf(named) <= now)
    return { refusal: { ok: false, reason: 'expired', serviceTime: now } };
  if (named && holder === named) return { lease: named };
  if (named) return { refusal: { ok: false, reason: 'not-holder', serviceTime: now } };
  const refusal = ownerRefusal(
    holder ? holderName(holder) : null,
    holder?.lease ? tokenOf(holder) : null,
    Number.POSITIVE_INFINITY,
    target,
    now,
  );
  return { refusal: refusal ?? { ok: false, reason: 'stale-token', serviceTime: now } };
}
