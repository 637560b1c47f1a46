import type {
  AcquireAttempt,
  FencedActionResult,
  FencedTarget,
  TryAcquireRequest,
} from '../policy/lockSchemas';

/** What the service holds for a key right now, read on its own clock. */
export interface LockRecord {
  key: string;
  holder: string | null;
  token: string | null;
  leaseUntil: number | null;
  /** The newest token ever issued for the key; the next grant is strictly greater. */
  lastToken: string | null;
  serviceTime: number;
}

/**
 * The contract every lock backend keeps. The service alone issues fencing tokens (strictly
 * increasing per key, never reused, also across restarts) and alone judges lease deadlines, on its
 * own clock: no operation takes a time from the caller. Renew and release are compare-and-act on
 * (holder, token), so a stale token changes nothing. Bad input is refused with InvalidLockRequest
 * before anything is stored.
 */
export interface LockService {
  /** Short backend name for logs and test names, e.g. `sqlite`. */
  readonly backend: string;
  /** Grants a new lease, or says why not. Idempotent for a requester that already holds the key. */
  tryAcquire(request: TryAcquireRequest): Promise<AcquireAttempt>;
  /** Reads the key's current holder, token and deadline. */
  inspect(key: string): Promise<LockRecord>;
  /** Extends a live lease by its original TTL if (holder, token) still match. */
  renew(target: FencedTarget): Promise<FencedActionResult>;
  /** Ends a lease if (holder, token) still match; anyone else's release changes nothing. */
  release(target: FencedTarget): Promise<FencedActionResult>;
  /** Releases the connection or file handle. */
  close(): Promise<void>;
}
