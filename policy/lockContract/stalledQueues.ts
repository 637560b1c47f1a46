// Which stalled queues a sweep wakes: seen stalled twice, or behind a lease that ran out unkept.

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

/** What a sweep remembers for the next: each stalled key's head, and the leases seen lapsing. */
export interface SweepMemory {
  heads: ReadonlyMap<string, string>;
  lapsing: ReadonlyMap<string, number>;
}

/** The first sweep's memory. */
export const NOTHING_SEEN: SweepMemory = { heads: new Map(), lapsing: new Map() };

/** What one sweep decides: the queues to wake now, and what the next sweep compares with. */
interface SweepVerdict {
  wake: StalledQueueSeen[];
  seen: SweepMemory;
}

/**
 * Which stalled queues a sweep wakes. A queue seen stalled once may be a hand-off on its way (the
 * release's wake-up not yet taken); seen twice, a sweep apart, behind the same head, nobody told its
 * head, because no session holds the key to tell it (the holder was terminated or lives outside
 * lockwarden, or the woken head's session died before it tried). A queue behind a lease this sweep or
 * an earlier one saw lapsing is woken at once: that lease ran out with nobody to release it, so no
 * hand-off is on its way, and the head learns of it within one sweep of the lease's end.
 */
export function queuesToWake(
  previous: SweepMemory,
  stalled: StalledQueueSeen[],
  lapsingNow: LapsingLease[] = [],
): SweepVerdict {
  const lapsing = new Map<string, number>();
  for (const [key, sweepsLeft] of previous.lapsing) if (sweepsLeft > 1) lapsing.set(key, sweepsLeft - 1);
  for (const { key, sweepsLeft } of lapsingNow) lapsing.set(key, Math.max(sweepsLeft, lapsing.get(key) ?? 0));
  const heads = new Map<string, string>();
  const wake: StalledQueueSeen[] = [];
  for (const queue of stalled) {
    const head = queue.waiters[0];
    if (head === undefined) continue;
    heads.set(queue.key, head);
    if (previous.heads.get(queue.key) === head || lapsing.has(queue.key) || previous.lapsing.has(queue.key)) {
      wake.push(queue);
      lapsing.delete(queue.key);
    }
  }
  return { wake, seen: { heads, lapsing } };
}
