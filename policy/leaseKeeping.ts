import { LATENCY_FLOOR_MS } from './constants';

// When a hold renews, and how soon a keeper whose worker died is replaced: reviewed rules, never
// taken from a decision.

/** A holding session renews at this fraction of the TTL. */
export const RENEW_FRACTION = 1 / 3;

/** How often a lease of `ttlMs` is renewed. */
export function renewalIntervalMs(ttlMs: number): number {
  return Math.max(LATENCY_FLOOR_MS, Math.floor(ttlMs * RENEW_FRACTION));
}

/**
 * How long the server waits for a keeper's heartbeat before it runs the keeper again elsewhere. The
 * lease, last renewed at most one interval before the keeper's worker died, lasts two more intervals;
 * the server notices the silence at most this long after the last heartbeat it got, and the next
 * attempt renews at once. So it is two intervals less a margin (for the retry's dispatch and the
 * server's timer precision), and the new keeper renews before the lease runs out. The SDK sends
 * heartbeats at most every 0.8 of it: that, times the holders, is the server's load.
 */
export function keeperHeartbeatTimeoutMs(renewEveryMs: number): number {
  return 2 * renewEveryMs - Math.min(2_000, renewEveryMs / 2);
}
