/** A ticket in a key's queue as the lock service lists it, head first; `since` is on its clock. */
export interface QueuedTicket {
  requester: string;
  priority: number;
  /** When the waiter took its place; null where the service did not record it. */
  since: number | null;
}

/** A waiter that a later arrival of the same priority stands ahead of: a first-come order broken. */
export interface Overtaking {
  key: string;
  waiter: string;
  waiterSince: number;
  overtakenBy: string;
  overtakerSince: number;
}

/**
 * The waiters of `queue` (head first) that a later arrival of the same priority stands ahead of. A
 * queue the service keeps in order never shows one: it means a ticket was moved or a grant skipped the
 * line. Each overtaken waiter is named once, with the first such arrival ahead of it.
 */
export function overtakings(key: string, queue: readonly QueuedTicket[]): Overtaking[] {
  const found: Overtaking[] = [];
  queue.forEach((waiter, position) => {
    if (waiter.since === null) return;
    const overtaker = queue
      .slice(0, position)
      .find(
        (ahead) => ahead.priority === waiter.priority && ahead.since !== null && ahead.since > waiter.since!,
      );
    if (overtaker)
      found.push({
        key,
        waiter: waiter.requester,
        waiterSince: waiter.since,
        overtakenBy: overtaker.requester,
        overtakerSince: overtaker.since!,
      });
  });
  return found;
}

/** The escalation reason of an overtaken waiter, readable. */
export function describeOvertaking(o: Overtaking): string {
  return (
    `fairness-violation: ${o.overtakenBy} (queued at ${new Date(o.overtakerSince).toISOString()}) ` +
    `was put ahead of ${o.waiter} (queued at ${new Date(o.waiterSince).toISOString()}) on ${o.key}`
  );
}

/**
 * Whether the lock service's holder and queue (read after the notice) bear out an overtaking notice:
 * the waiter is still queued since the time the notice names, and the later arrival either still
 * stands ahead of it since the time the notice names, or has taken the key meanwhile (the release
 * that found it woke that arrival first). In the last case the arrival's time is the notice's word:
 * a false one costs a page, never a lease.
 */
export function overtakingConfirmed(
  claim: Overtaking,
  service: { holder: string | null; queue: readonly QueuedTicket[] },
): boolean {
  const mine = service.queue.findIndex((t) => t.requester === claim.waiter);
  if (mine < 0 || service.queue[mine]!.since !== claim.waiterSince) return false;
  if (service.holder === claim.overtakenBy) return true;
  return service.queue
    .slice(0, mine)
    .some((t) => t.requester === claim.overtakenBy && t.since === claim.overtakerSince);
}
