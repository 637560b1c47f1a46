// The LockService contract: what every backend answers, on its own clock.
import type {
  AcquireAttempt,
  FencedActionResult,
  FencedTarget,
  Holding,
  TryAcquireRequest,
  Wait,
  WaiterRef,
} from '../policy/lockContract/lockSchemas';

/** What the service holds for a key right now, read on its own clock. */
export interface LockRecord {
  key: string;
  holder: string | null;
  token: string | null;
  leaseUntil: number | null;
  /**
   * The newest token issued for the key while the service still keeps it (null once the key has been
   * idle past the retention and forgotten); the next grant is strictly greater either way.
   */
  lastToken: string | null;
  /** Live waiters, head first. */
  waiters: string[];
  /** The same waiters with their tickets, head first, for operators. */
  queue: QueuedWaiter[];
  serviceTime: number;
}

/** A live queue ticket, as an operator sees it; times are on the service's clock. */
export interface QueuedWaiter {
  requester: string;
  priority: number;
  /** When the waiter first took its place; null for a ticket stored before the service kept it. */
  since: number | null;
  /** When the ticket lapses unless the waiter asks again; null where the service keeps that to itself (etcd). */
  expiresAt: number | null;
}

/**
 * A live lease with less than a given fraction of its TTL left, read on the service's clock: one whose
 * keeper has missed a renewal (see `leasesRunningLow`).
 */
export interface LowLease extends Omit<Holding, 'owner'> {
  ttlMs: number;
  /** What is left of the lease, on the service's clock. */
  remainingMs: number;
}

/** A key that no live lease holds while its queue still has live tickets: its waiters, head first. */
export interface StalledQueue {
  key: string;
  waiters: string[];
}

/** What every backend accepts when it is opened, beside its own connection settings. */
export interface LockServiceLimits {
  /** Longest TTL the service grants. */
  maxTtlMs?: number;
  /**
   * How long a key with no lease and no ticket is kept before forgetIdleKeys drops it; 0 keeps every
   * key for ever, as 0.1.0 did (its workers count tokens per key: run so while any of them runs).
   */
  idleKeyRetentionMs?: number;
  /** Most live tickets one key's queue takes (DEFAULT_MAX_WAITERS_PER_KEY); beyond, QUEUE_FULL. */
  maxWaitersPerKey?: number;
  /** Most keys one requester holds or waits for (DEFAULT_MAX_KEYS_PER_REQUESTER); beyond, REQUESTER_LIMIT. */
  maxKeysPerRequester?: number;
}

/**
 * The contract every lock backend keeps. The service alone issues fencing tokens (strictly
 * increasing per key, never reused, also across restarts and across a key being forgotten) and alone judges lease deadlines and queue
 * tickets, on its own clock: no operation takes a time from the caller. Renew and release are
 * compare-and-act on (holder, token), so a stale token changes nothing. Bad input is refused with
 * InvalidLockRequest before anything is stored.
 */
export interface LockService {
  /** Short backend name for logs and test names, e.g. `sqlite`. */
  readonly backend: string;
  /** Shortest lease the backend can time precisely; shorter TTLs are rounded up to it. */
  readonly minTtlMs: number;
  /** Grants a lease, or says why not (and, under FIFO or priority fairness, keeps the requester's place). */
  tryAcquire(request: TryAcquireRequest): Promise<AcquireAttempt>;
  /** Reads the key's current holder, token, deadline and waiters. */
  inspect(key: string): Promise<LockRecord>;
  /** Extends a live lease by its original TTL if (holder, token) still match. */
  renew(target: FencedTarget): Promise<FencedActionResult>;
  /** Ends a lease if (holder, token) still match; anyone else's release changes nothing. */
  release(target: FencedTarget): Promise<FencedActionResult>;
  /** The requester's 1-based place in the key's queue, or null without a live ticket. */
  position(waiter: WaiterRef): Promise<number | null>;
  /** Gives up a place in the queue (a session that stops waiting). */
  leave(waiter: WaiterRef): Promise<void>;
  /** Every live lease, for the wait-for graph. */
  holdings(): Promise<Holding[]>;
  /** Every live queue ticket, for the wait-for graph. */
  waits(): Promise<Wait[]>;
  /**
   * The keys no live lease holds whose queues have live tickets, with their waiters head first: what
   * the queue sweep wakes when no holder's session is left to (a holder terminated, or outside
   * lockwarden). Read per key held or not, never per waiter of a held key.
   */
  stalledQueues(): Promise<StalledQueue[]>;
  /**
   * The live leases with less than `fractionLeft` of their TTL left (0 < fractionLeft ≤ 1), judged
   * on the service's clock: a lease renewed on schedule never falls that low, so these are the leases
   * whose keepers have gone quiet. The sweep renews them for a session that still holds them.
   */
  leasesRunningLow(fractionLeft: number): Promise<LowLease[]>;
  /**
   * Forgets what the service keeps of keys that have had no lease and no live ticket for its idle-key
   * retention (IDLE_KEY_RETENTION_MS unless opened with another), and of lapsed tickets, at most
   * FORGET_IDLE_BATCH at a time, oldest first; returns how many records went. The sweep calls it, so
   * storage follows the keys in use, not every key ever used. A forgotten key's next token is still
   * above every token it had: tokens come from one sequence per service, not one per key.
   */
  forgetIdleKeys(): Promise<number>;
  /** Releases the connection or file handle. */
  close(): Promise<void>;
}
