// Which stalled queues a sweep wakes (seen stalled twice, or behind a lease that ran out unkept), and
// which heads it takes out of their queue (woken for a minute, and never tried).

/** A queue the lock service shows stalled: no live lease on its key, live tickets behind it. */
interface StalledQueueSeen {
  key: string;
  waiters: string[];
}

/**
 * A lease the sweep saw running low with no session to renew it (its session ended, or no worker
 * answers for it), and how many more sweeps it may take to run out.
 */
export interface LapsingLease {
  key: string;
  sweepsLeft: number;
}

/** A stalled key's head, and at how many sweeps in a row it has been seen there. */
interface HeadSeen {
  head: string;
  sweeps: number;
}

/** What a sweep remembers for the next: each stalled key's head, and the leases seen lapsing. */
export interface SweepMemory {
  heads: ReadonlyMap<string, HeadSeen>;
  lapsing: ReadonlyMap<string, number>;
}

/** The first sweep's memory. */
export const NOTHING_SEEN: SweepMemory = { heads: new Map(), lapsing: new Map() };

/**
 * How long a head may stay at the head of a free key's queue while the sweep wakes it, before the
 * sweep takes it out of the queue. A head that can act tries within one workflow task of a wake-up
 * and takes the key; one that has not in a minute cannot act (its workflow task fails on every
 * attempt, its worker cannot reach the lock service, no worker polls its queue), and its ticket would
 * hold the queue for the ticket's hour. Taken out, it loses its place, not a lease: if it comes back
 * it queues again at the back.
 */
export const UNRESPONSIVE_HEAD_MS = 60_000;

/** A head taken out of its queue: the sweep has woken it for UNRESPONSIVE_HEAD_MS, and it never tried. */
export interface UnresponsiveHead {
  key: string;
  requester: string;
}

/** What one sweep decides: the queues to wake, the heads to take out, what the next sweep compares with. */
interface SweepVerdict {
  wake: StalledQueueSeen[];
  unresponsive: UnresponsiveHead[];
  seen: SweepMemory;
}

/**
 * Which stalled queues a sweep wakes, and which heads it takes out. A queue seen stalled once may be
 * a hand-off on its way (the release's wake-up not yet taken); seen twice, a sweep apart, behind the
 * same head, nobody told its head, because no session holds the key to tell it (the holder was
 * terminated or lives outside lockwarden, or the woken head's session died before it tried). A queue
 * behind a lease this sweep or an earlier one saw lapsing is woken at once: that lease ran out with
 * nobody to release it, so no hand-off is on its way, and the head learns of it within one sweep of
 * the lease's end. A head seen at more than `unresponsiveAfterSweeps` sweeps in a row
 * (UNRESPONSIVE_HEAD_MS of them) is taken out.
 */
export function queuesToWake(
  previous: SweepMemory,
  stalled: StalledQueueSeen[],
  lapsingNow: LapsingLease[] = [],
  unresponsiveAfterSweeps = Number.POSITIVE_INFINITY,
): SweepVerdict {
  const lapsing = new Map<string, number>();
  for (const [key, sweepsLeft] of previous.lapsing) if (sweepsLeft > 1) lapsing.set(key, sweepsLeft - 1);
  for (const { key, sweepsLeft } of lapsingNow) lapsing.set(key, Math.max(sweepsLeft, lapsing.get(key) ?? 0));
  const heads = new Map<string, HeadSeen>();
  const wake: StalledQueueSeen[] = [];
  const unresponsive: UnresponsiveHead[] = [];
  for (const queue of stalled) {
    const head = queue.waiters[0];
    if (head === undefined) continue;
    const before = previous.heads.get(queue.key);
    const sweeps = before?.head === head ? before.sweeps + 1 : 1;
    if (sweeps > unresponsiveAfterSweeps) {
      // Woken at every sweep since, and still the head of a free key: out of the queue, and the next
      // head is woken (seen anew, it has its own minute).
      unresponsive.push({ key: queue.key, requester: head });
      if (queue.waiters.length > 1) wake.push({ key: queue.key, waiters: queue.waiters.slice(1) });
      continue;
    }
    heads.set(queue.key, { head, sweeps });
    if (sweeps > 1 || lapsing.has(queue.key) || previous.lapsing.has(queue.key)) {
      wake.push(queue);
      lapsing.delete(queue.key);
    }
  }
  return { wake, unresponsive, seen: { heads, lapsing } };
}
