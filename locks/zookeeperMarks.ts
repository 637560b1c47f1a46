// A requester's marks on the ZooKeeper backend: one node per key it holds or waits for, which
// REQUESTER_LIMIT counts (ZooKeeper keeps a node's child count in its stat: one read, any count).
import { deadlineOf, type Leased, listTickets, readLock, readTicket, type ZkLayout } from './zookeeperLayout';
import { ZK, zkCode, type ZkSession } from './zookeeperSession';

/**
 * How many other keys `requester` holds or waits for: its marks, counted by its node's child count;
 * only when that reaches `max` are the marks read one by one against the keys' leases and tickets at
 * ZooKeeper time `now()`, and those whose lease or ticket has gone removed, so a mark a lapsed ticket
 * left never refuses a requester. `markedHere`: the requester has a mark on `key` itself.
 */
export async function keysEngaged(
  zk: ZkSession,
  layout: ZkLayout,
  request: { requester: string; key: string; markedHere: boolean; max: number; now: () => Promise<number> },
): Promise<number> {
  const { requester, key } = request;
  const marks = (await zk.exists(layout.requesterPath(requester)))?.numChildren ?? 0;
  const counted = request.markedHere ? marks - 1 : marks;
  if (counted < request.max) return counted;
  const now = await request.now();
  const list = await zk.getChildren(layout.requesterPath(requester));
  const engaged = await Promise.all(
    (list?.children ?? []).map(async (name) => {
      const other = decodeURIComponent(name);
      if (other === key) return false;
      const [read, names] = await Promise.all([readLock(zk, layout, other), listTickets(zk, layout, other)]);
      const holds = read.children.some((c) => c.lease?.holder === requester && deadlineOf(c as Leased) > now);
      const mine = names.filter((t) => t.requester === requester);
      const tickets = await Promise.all(mine.map((t) => readTicket(zk, other, t)));
      const waits = tickets.some((t) => t !== null && t.expiresAt > now);
      if (!holds && !waits) await zk.removeIfAny(layout.markPath(requester, other));
      return holds || waits;
    }),
  );
  return engaged.filter(Boolean).length;
}

/** Removes a requester's mark on a key, and its requester node once that holds no other. */
export async function dropMark(
  zk: ZkSession,
  layout: ZkLayout,
  requester: string,
  key: string,
): Promise<void> {
  await zk.removeIfAny(layout.markPath(requester, key));
  await zk.removeIfAny(layout.requesterPath(requester)).catch((error: unknown) => {
    if (zkCode(error) !== ZK.NOT_EMPTY) throw error;
  });
}
