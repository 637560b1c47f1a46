// Where the ZooKeeper backend keeps a key's lease, queue and requester marks, and how it reads them:
// the lease on Apache Curator's InterProcessMutex path, so Curator and lockwarden exclude each other.
import { randomUUID } from 'node:crypto';
import type { Stat } from 'node-zookeeper-client';
import { CorruptLockStateError } from '../policy/errors';
import type { Ticket } from './grantRules';
import { queueOrder } from './grantRules';
import { statLong, statTime, type ZkSession } from './zookeeperSession';

/**
 * Curator's lock name: an InterProcessMutex's node under its path is `_c_<uuid>-lock-<sequence>`
 * (protection prefix, lock name, ZooKeeper's ten-digit sequence), and the node whose text after the
 * last `lock-` sorts first holds the lock (StandardLockInternalsDriver.fixForSorting).
 */
const LOCK_NAME = 'lock-';

/**
 * A lock key or requester as one ZooKeeper node name: percent-encoded (so `billing/export` is one
 * node, `billing%2Fexport`), with `.` and `..`, which ZooKeeper refuses as names, encoded too.
 */
export function nodeName(name: string): string {
  const encoded = encodeURIComponent(name);
  return encoded === '.' || encoded === '..' ? encoded.replace(/\./g, '%2E') : encoded;
}

/** The ZooKeeper paths of one lockwarden root (the URL's chroot). */
export function layoutOf(root: string) {
  return {
    root,
    locks: `${root}/locks`,
    waits: `${root}/waits`,
    requesters: `${root}/requesters`,
    /** Written to read ZooKeeper's clock: the write's mtime is the leader's time. */
    clock: `${root}/clock`,
    /** A key's InterProcessMutex path: what a Curator client names to share the lock. */
    lockPath: (key: string) => `${root}/locks/${nodeName(key)}`,
    /** What a lease node is created as (PERSISTENT_SEQUENTIAL appends the sequence), as Curator names its own. */
    leaseNodePrefix: (key: string) => `${root}/locks/${nodeName(key)}/_c_${randomUUID()}-${LOCK_NAME}`,
    queuePath: (key: string) => `${root}/waits/${nodeName(key)}`,
    requesterPath: (requester: string) => `${root}/requesters/${nodeName(requester)}`,
    markPath: (requester: string, key: string) =>
      `${root}/requesters/${nodeName(requester)}/${nodeName(key)}`,
  };
}
export type ZkLayout = ReturnType<typeof layoutOf>;

/** What a lockwarden lease node holds (Curator's own nodes hold its client's address, or nothing). */
export interface LeaseData {
  lockwarden: 1;
  holder: string;
  ttlMs: number;
  owner?: string;
}

/** What a key's lock node (the InterProcessMutex path itself) holds for lockwarden. */
export interface LockNodeData {
  /** The token of the key's last lease to go, while its key is kept. */
  lastToken?: string;
  /** When the key went idle, on ZooKeeper's clock, if not at the node's own mtime (a lapsed lease's deadline). */
  idleSince?: number;
}

/** One child of a key's InterProcessMutex path: a lockwarden lease, or an outsider's (Curator's) node. */
export interface LockChild {
  name: string;
  path: string;
  stat: Stat;
  /** The node's data when lockwarden wrote it; null for an outsider's node. */
  lease: LeaseData | null;
}

/** A key's InterProcessMutex path as read: its own stat and data (null when absent) and its children in lock order. */
export interface LockRead {
  stat: Stat | null;
  data: LockNodeData;
  children: LockChild[];
}

/** The fencing token of a lockwarden lease: the zxid that created its node. */
export const tokenOf = (child: LockChild): string => statLong(child.stat.czxid).toString();

/** A lockwarden lease's deadline on ZooKeeper's clock: its last write (grant or renewal) plus its TTL. */
export const deadlineOf = (child: LockChild & { lease: LeaseData }): number =>
  statTime(child.stat.mtime) + child.lease.ttlMs;

/** How an outsider's node is named as a holder: it has no requester lockwarden could know. */
export const outsiderName = (child: LockChild): string => `curator:${child.name}`;

/** Curator's order of lock nodes: by the text after the last `lock-` (the sequence), else the whole name. */
function sortKey(name: string): string {
  const at = name.lastIndexOf(LOCK_NAME);
  return at < 0 ? name : name.slice(at + LOCK_NAME.length);
}

/** Reads a key's InterProcessMutex path: every child with its data, in Curator's lock order. */
export async function readLock(zk: ZkSession, layout: ZkLayout, key: string): Promise<LockRead> {
  const path = layout.lockPath(key);
  const [list, own] = await Promise.all([zk.getChildren(path), zk.getDataIfAny(path)]);
  if (!list || !own) return { stat: null, data: {}, children: [] };
  const names = [...list.children].sort((a, b) =>
    sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0,
  );
  const read = await Promise.all(
    names.map(async (name) => {
      const node = await zk.getDataIfAny(`${path}/${name}`);
      return node ? { name, path: `${path}/${name}`, stat: node.stat, lease: leaseData(node.data) } : null;
    }),
  );
  return { stat: own.stat, data: lockNodeData(own.data), children: read.filter((c) => c !== null) };
}

/**
 * Who holds a key at ZooKeeper time `now`: the first child in lock order that is not a lapsed
 * lockwarden lease (a lapsed one is as good as gone, and the next grant or sweep removes it); the
 * lapsed ones; and the lockwarden leases behind the holder (a grant whose answer was lost).
 */
export function holderOf(read: LockRead, now: number) {
  const lapsed = read.children.filter((c) => c.lease !== null && deadlineOf(c as Leased) <= now) as Leased[];
  const holder = read.children.find((c) => !lapsed.includes(c as Leased)) ?? null;
  return { holder, lapsed };
}
export type Leased = LockChild & { lease: LeaseData };

/** The newest token the key's path still records: its newest lease node's, or the last one to go. */
export function lastTokenOf(read: LockRead): string | null {
  const tokens = read.children.filter((c) => c.lease !== null).map((c) => statLong(c.stat.czxid));
  if (read.data.lastToken) tokens.push(BigInt(read.data.lastToken));
  return tokens.length === 0 ? null : tokens.reduce((a, b) => (a > b ? a : b)).toString();
}

/**
 * A ticket's node name: the requester, its priority and the sequence ZooKeeper appends, so one list
 * of the queue node gives every waiter in queue order without reading a node.
 */
export const ticketNamePrefix = (requester: string, priority: number) =>
  `${nodeName(requester)}.p${priority}.`;
const TICKET_NAME = /^(.+)\.p(\d{1,4})\.(\d{10})$/;

/** A ticket as its name gives it; whether it is live takes a read of its node (readTicket). */
export interface TicketName {
  requester: string;
  priority: number;
  /** The sequence ZooKeeper gave it in its queue: arrival order. */
  seq: number;
  path: string;
}

/** A ticket read from its node: expiry and arrival on ZooKeeper's clock. */
export type ZkTicket = Ticket & { path: string; version: number };

/** Every ticket of a key's queue, by name, in queue order (priority first, then arrival). */
export async function listTickets(zk: ZkSession, layout: ZkLayout, key: string): Promise<TicketName[]> {
  const queue = layout.queuePath(key);
  const list = await zk.getChildren(queue);
  if (!list) return [];
  return list.children
    .flatMap((name) => {
      const parts = TICKET_NAME.exec(name);
      if (!parts) throw new CorruptLockStateError(key, [`a ticket node is named ${JSON.stringify(name)}`]);
      const [, requester, priority, seq] = parts;
      return [
        {
          requester: decodeURIComponent(requester!),
          priority: Number(priority),
          seq: Number(seq),
          path: `${queue}/${name}`,
        },
      ];
    })
    .sort(queueOrder);
}

/** One ticket's node read: when it lapses, when it was taken, its owner; null once it has gone. */
export async function readTicket(zk: ZkSession, key: string, ticket: TicketName): Promise<ZkTicket | null> {
  const node = await zk.getDataIfAny(ticket.path);
  if (!node) return null;
  const value = storedTicket(key, node.data);
  return {
    ...ticket,
    expiresAt: statTime(node.stat.mtime) + value.ticketMs,
    since: statTime(node.stat.ctime),
    owner: value.owner ?? null,
    version: node.stat.version,
  };
}

/** Every ticket of a key's queue, each node read (live or lapsed), in queue order. */
export async function readTickets(zk: ZkSession, layout: ZkLayout, key: string): Promise<ZkTicket[]> {
  const names = await listTickets(zk, layout, key);
  return (await Promise.all(names.map((t) => readTicket(zk, key, t)))).filter((t) => t !== null);
}

/** What a ticket node holds: how long it lasts past its last write, its owner. */
export interface TicketData {
  ticketMs: number;
  owner?: string;
}

function storedTicket(key: string, data: Buffer): TicketData {
  try {
    const value = JSON.parse(data.toString()) as TicketData;
    if (Number.isInteger(value.ticketMs)) return value;
  } catch {
    // Reported below.
  }
  throw new CorruptLockStateError(key, ['a ticket node does not hold what lockwarden writes']);
}

// A lock node's data is lockwarden's lease when it parses as one; anything else is an outsider's.
function leaseData(data: Buffer): LeaseData | null {
  try {
    const value = JSON.parse(data.toString()) as Partial<LeaseData>;
    return value?.lockwarden === 1 && typeof value.holder === 'string' && Number.isInteger(value.ttlMs)
      ? (value as LeaseData)
      : null;
  } catch {
    return null;
  }
}

// Curator creates the path with no data; lockwarden writes JSON to it.
function lockNodeData(data: Buffer): LockNodeData {
  try {
    const value = JSON.parse(data.toString()) as LockNodeData | null;
    return value && typeof value === 'object' ? value : {};
  } catch {
    return {};
  }
}

export const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

/**
 * A read of one key within a read of many (every holding, every queue, a sweep): a key whose nodes
 * lockwarden did not write is left out (`instead`), as checkedLockService leaves out such entries,
 * so one stops no one else's sweep; a read of that key itself still fails.
 */
export async function unlessCorrupt<T>(read: () => Promise<T>, instead: T): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof CorruptLockStateError) return instead;
    throw error;
  }
}
