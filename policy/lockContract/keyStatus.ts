// What `lockctl status` shows of one key: read from the lock service, on its clock. Pure.

/** A key's holder and queue as the lock service reports them (the fields of its `inspect()`). */
interface InspectedKey {
  key: string;
  holder: string | null;
  token: string | null;
  leaseUntil: number | null;
  lastToken: string | null;
  queue: { requester: string; priority: number; since: number | null; expiresAt: number | null }[];
  serviceTime: number;
}

/** One waiter in the key's queue, with durations on the lock service's clock. */
export interface QueuedWaiterStatus {
  place: number;
  requester: string;
  priority: number;
  /** How long it has held its place; null when the service did not record when it took it. */
  waitingMs: number | null;
  /** How long its ticket lives unless it asks again; null where the service keeps that to itself. */
  ticketLeftMs: number | null;
}

/** A key's status: who holds it with which token for how much longer, and who waits in what order. */
export interface LockStatus {
  key: string;
  backend: string;
  /** The lock service's clock when it was read (ms since the epoch). */
  serviceTime: number;
  holder: string | null;
  token: string | null;
  leaseLeftMs: number | null;
  /** The newest token the service has issued for the key; the next grant is strictly greater. */
  lastToken: string | null;
  queue: QueuedWaiterStatus[];
}

/** The status of a key from what the lock service read, all durations on its clock. */
export function toLockStatus(inspected: InspectedKey, backend: string): LockStatus {
  const now = inspected.serviceTime;
  return {
    key: inspected.key,
    backend,
    serviceTime: now,
    holder: inspected.holder,
    token: inspected.token,
    leaseLeftMs: inspected.leaseUntil === null ? null : Math.max(0, inspected.leaseUntil - now),
    lastToken: inspected.lastToken,
    queue: inspected.queue.map((w, i) => ({
      place: i + 1,
      requester: w.requester,
      priority: w.priority,
      waitingMs: w.since === null ? null : Math.max(0, now - w.since),
      ticketLeftMs: w.expiresAt === null ? null : Math.max(0, w.expiresAt - now),
    })),
  };
}
