// When a hold renews, who renews it when its keeper falls silent, and how soon a silent keeper is
// replaced: reviewed rules, never taken from a decision.
import { LATENCY_FLOOR_MS, MAX_QUEUE_SWEEP_MS } from '../constants';

/**
 * How long one lock-service call of a holder (a renewal, a proof of its lease) may take before it
 * counts as unanswered: a partitioned link hangs rather than fails, and a holder that waited on it
 * would go on holding past its deadline without knowing. So a holder learns of a lost link within one
 * renewal interval and this.
 */
export const LOCK_CALL_TIMEOUT_MS = 2_000;

/** A holding session renews at this fraction of the TTL. */
export const RENEW_FRACTION = 1 / 3;

/** How often a lease of `ttlMs` is renewed. */
export function renewalIntervalMs(ttlMs: number): number {
  return Math.max(LATENCY_FLOOR_MS, Math.floor(ttlMs * RENEW_FRACTION));
}

/**
 * How long a keeper that starts at `now` waits before its first renewal: until the lease is due, one
 * interval after it was granted or last renewed, judged by how much of it is left (`leaseUntil`, the
 * service's deadline, read against this host's clock). A keeper whose activity task waited to be
 * started (a slow link to Temporal, a busy worker) renews at once instead of waiting a whole interval
 * from its own start, which could take it past the deadline. The TTL is the interval's multiple
 * (RENEW_FRACTION); at the interval's floor that overstates it, and the keeper renews a little early.
 */
export function firstRenewalInMs(leaseUntil: number, renewEveryMs: number, now: number): number {
  const ttlMs = renewEveryMs / RENEW_FRACTION;
  const dueInMs = leaseUntil - now - (ttlMs - renewEveryMs);
  return Math.min(renewEveryMs, Math.max(0, Math.round(dueInMs)));
}

/**
 * How long a fresh hold goes without a keeper: half an interval. A lease is not due for renewal
 * before one interval has passed, so a hold released sooner (most are) never starts a keeper, an
 * activity task the server dispatches and cancels; a keeper started then still has half an interval to
 * be dispatched before its first renewal is due (firstRenewalInMs), and the sweep covers one later.
 */
export function keeperStartInMs(renewEveryMs: number): number {
  return Math.floor(renewEveryMs / 2);
}

/**
 * The queue sweep renews, for a session that still holds it, a lease with less than this fraction of
 * its TTL left. A keeper on schedule renews with 1 − RENEW_FRACTION (two thirds) left, so a lease
 * below 0.6 has missed its renewal by a tenth of its TTL: its keeper's worker died or stalled.
 */
export const SILENT_LEASE_FRACTION = 0.6;

/** How long a sweep's renewal may take to land once the sweep has seen a silent lease. */
const SWEEP_RENEWAL_MS = 1_000;

/**
 * Whether a sweep every `sweepEveryMs` (at most MAX_QUEUE_SWEEP_MS, as a worker allows) renews a
 * silent lease of `ttlMs` before it runs out: the lease falls below SILENT_LEASE_FRACTION, the next
 * sweep sees it within one interval, and its renewal lands within SWEEP_RENEWAL_MS.
 */
export function sweepKeepsLease(ttlMs: number, sweepEveryMs: number = MAX_QUEUE_SWEEP_MS): boolean {
  return ttlMs * SILENT_LEASE_FRACTION >= sweepEveryMs + SWEEP_RENEWAL_MS;
}

/**
 * A keeper whose lease the sweep keeps can be silent long before Temporal runs it again elsewhere: a
 * keeper heartbeats before each renewal (to learn whether its session still runs), and a keeper
 * silent this long is run again on another worker. Each firing of the server's heartbeat timer is a
 * write of the session's state on the Temporal server, so the longer this is, the fewer a stalled
 * worker's pauses cost.
 */
const SWEPT_KEEPER_HEARTBEAT_TIMEOUT_MS = 120_000;

/**
 * How long the server waits for a keeper's heartbeat before it runs the keeper again elsewhere.
 *
 * A lease the sweep keeps (sweepKeepsLease) needs no quick replacement: while the keeper is silent
 * the sweep renews it, so the timeout is SWEPT_KEEPER_HEARTBEAT_TIMEOUT_MS. A shorter lease has only
 * Temporal: renewed at most one interval before the keeper's worker died, it lasts two more
 * intervals; the server notices the silence at most this long after the last heartbeat it got, and
 * the next attempt renews at once. So the timeout is two intervals less a margin (for the retry's
 * dispatch and the server's timer precision), and the new keeper renews before the lease runs out.
 */
export function keeperHeartbeatTimeoutMs(ttlMs: number): number {
  const renewEveryMs = renewalIntervalMs(ttlMs);
  const beforeLeaseEnds = 2 * renewEveryMs - Math.min(2_000, renewEveryMs / 2);
  return sweepKeepsLease(ttlMs)
    ? Math.max(SWEPT_KEEPER_HEARTBEAT_TIMEOUT_MS, beforeLeaseEnds)
    : beforeLeaseEnds;
}
