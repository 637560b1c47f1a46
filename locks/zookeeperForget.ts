// The ZooKeeper backend's forgetting: lapsed leases and tickets removed, idle keys' nodes dropped.
import { FORGET_IDLE_BATCH } from '../policy/constants';
import {
  holderOf,
  json,
  unlessCorrupt,
  lastTokenOf,
  readLock,
  readTickets,
  deadlineOf,
  type ZkLayout,
} from './zookeeperLayout';
import { statTime, ZK, zkCode, type ZkSession } from './zookeeperSession';

/** What one forgetting pass needs: the session, the layout, ZooKeeper's time and the keys to look at. */
interface ForgetPass {
  zk: ZkSession;
  layout: ZkLayout;
  now: number;
  /** 0: a key with no lease and no ticket is kept for ever (its newest token with it). */
  retentionMs: number;
  keys: string[];
  dropMark: (requester: string, key: string) => Promise<void>;
}

// Keys looked at side by side: the reads of one pass are pipelined on the session's one connection.
const KEYS_AT_ONCE = 32;

/**
 * Removes lapsed leases (ZooKeeper has no TTL on a persistent node: a lease whose holder died stays
 * until this or the key's next grant removes it, and a Curator client waits behind it till then),
 * lapsed tickets of keys no one holds, and the nodes of keys idle past the retention; at most about
 * FORGET_IDLE_BATCH records per pass. Returns how many nodes went.
 */
export async function forgetIdle(pass: ForgetPass): Promise<number> {
  let forgotten = 0;
  for (let at = 0; at < pass.keys.length && forgotten < FORGET_IDLE_BATCH; at += KEYS_AT_ONCE) {
    const counts = await Promise.all(
      pass.keys.slice(at, at + KEYS_AT_ONCE).map((key) => unlessCorrupt(() => forgetKey(pass, key), 0)),
    );
    forgotten += counts.reduce((a, b) => a + b, 0);
  }
  return forgotten;
}

async function forgetKey(pass: ForgetPass, key: string): Promise<number> {
  const { zk, layout, now } = pass;
  const read = await readLock(zk, layout, key);
  const { holder, lapsed } = holderOf(read, now);
  const holdsHere = (requester: string) => read.children.some((c) => c.lease?.holder === requester);
  let gone = 0;
  let liveTickets = 0;
  // A held key's queue is left alone: its waiters are read only once the key is free.
  if (holder) liveTickets = 1;
  else {
    const tickets = await readTickets(zk, layout, key);
    for (const ticket of tickets) {
      if (ticket.expiresAt > now) {
        liveTickets++;
        continue;
      }
      if (!(await removed(zk, ticket.path, ticket.version))) continue;
      gone++;
      if (!holdsHere(ticket.requester)) await pass.dropMark(ticket.requester, key);
    }
    if (liveTickets === 0) await zk.removeIfAny(layout.queuePath(key)).catch(ignoreNotEmpty);
  }
  if (!read.stat) return gone;
  const others = read.children.filter((c) => !lapsed.includes(c as (typeof lapsed)[number]));
  const idleSince =
    lapsed.length > 0
      ? Math.max(...lapsed.map(deadlineOf))
      : (read.data.idleSince ?? statTime(read.stat.mtime));
  const forget =
    pass.retentionMs > 0 && others.length === 0 && liveTickets === 0 && idleSince + pass.retentionMs <= now;
  if (lapsed.length === 0 && !forget) return gone;
  const lockPath = layout.lockPath(key);
  try {
    await zk.multi(`forgetting of ${key}`, (tx) => {
      for (const old of lapsed) tx.remove(old.path, old.stat.version);
      if (forget) tx.remove(lockPath, read.stat!.version);
      else
        tx.setData(
          lockPath,
          json({ lastToken: lastTokenOf(read) ?? undefined, idleSince }),
          read.stat!.version,
        );
    });
  } catch (error) {
    // The key changed since it was read (a grant, a renewal, a Curator client): the next pass looks again.
    if ([ZK.BAD_VERSION, ZK.NO_NODE, ZK.NOT_EMPTY].includes(zkCode(error) as never)) return gone;
    throw error;
  }
  for (const old of lapsed) await pass.dropMark(old.lease.holder, key);
  return gone + lapsed.length + (forget ? 1 : 0);
}

// Removes a node at the version read; false when it changed (a ticket renewed meanwhile) or went.
async function removed(zk: ZkSession, path: string, version: number): Promise<boolean> {
  try {
    await zk.removeIfAny(path, version);
    return true;
  } catch (error) {
    if (zkCode(error) === ZK.BAD_VERSION) return false;
    throw error;
  }
}

function ignoreNotEmpty(error: unknown): void {
  if (zkCode(error) !== ZK.NOT_EMPTY) throw error;
}
