/** A queue the lock service shows stalled: no live lease on its key, live tickets behind it. */
interface StalledQueueSeen {
  key: string;
  waiters: string[];
}

/** What one sweep decides: the queues to wake now, and what the next sweep compares with. */
interface SweepVerdict {
  wake: StalledQueueSeen[];
  seen: Map<string, string>;
}

/**
 * Which stalled queues a sweep wakes: those it saw stalled behind the same head at the sweep before.
 * A queue seen stalled once may be a hand-off on its way (the release's wake-up not yet taken); seen
 * twice, a sweep apart, nobody told its head, because no session holds the key to tell it (the holder
 * was terminated or lives outside lockwarden, or the woken head's session died before it tried).
 * `previous` maps each key stalled at the last sweep to its head then.
 */
export function queuesToWake(
  previous: ReadonlyMap<string, string>,
  stalled: StalledQueueSeen[],
): SweepVerdict {
  const seen = new Map<string, string>();
  const wake: StalledQueueSeen[] = [];
  for (const queue of stalled) {
    const head = queue.waiters[0];
    if (head === undefined) continue;
    seen.set(queue.key, head);
    if (previous.get(queue.key) === head) wake.push(queue);
  }
  return { wake, seen };
}
