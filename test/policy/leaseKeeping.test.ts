import fc from 'fast-check';
import { MAX_QUEUE_SWEEP_MS } from '../../policy/constants';
import {
  firstRenewalInMs,
  keeperHeartbeatTimeoutMs,
  keeperStartInMs,
  renewalIntervalMs,
  RENEW_FRACTION,
  SILENT_LEASE_FRACTION,
  sweepKeepsLease,
} from '../../policy/decisions/leaseKeeping';

const anyTtl = fc.integer({ min: 200, max: 24 * 60 * 60 * 1000 });

describe("the lease keeper's timing", () => {
  it('keeps every lease whose keeper dies: the sweep renews it in time, or Temporal replaces the keeper in time', () => {
    fc.assert(
      fc.property(anyTtl, (ttlMs) => {
        const every = renewalIntervalMs(ttlMs);
        const timeout = keeperHeartbeatTimeoutMs(ttlMs);
        if (sweepKeepsLease(ttlMs)) {
          // The lease falls below the silent fraction, the slowest sweep sees it within one interval,
          // and the renewal lands within a second: all before the lease runs out.
          expect(ttlMs * SILENT_LEASE_FRACTION).toBeGreaterThanOrEqual(MAX_QUEUE_SWEEP_MS + 1_000);
        } else {
          // Worst case: the last renewal one interval before the worker died, the last heartbeat the
          // server got at the moment it died; the retried keeper needs a moment to be dispatched.
          const leaseLeftAtDeath = ttlMs - every;
          const dispatchMs = Math.min(500, every / 4);
          expect(timeout + dispatchMs).toBeLessThan(leaseLeftAtDeath);
        }
        // A live keeper, heartbeating after each renewal, is never timed out between two.
        expect(timeout).toBeGreaterThan(every);
      }),
    );
  });

  it('never lets the sweep renew a lease whose keeper renews on schedule', () => {
    fc.assert(
      fc.property(anyTtl, (ttlMs) => {
        // Just before a renewal on schedule the lease has all but one interval left: above the fraction.
        const leftBeforeRenewal = ttlMs - renewalIntervalMs(ttlMs);
        expect(leftBeforeRenewal).toBeGreaterThan(ttlMs * SILENT_LEASE_FRACTION);
      }),
    );
    expect(1 - RENEW_FRACTION).toBeGreaterThan(SILENT_LEASE_FRACTION);
  });

  it("starts a fresh hold's keeper with half an interval left before its first renewal is due", () => {
    fc.assert(
      fc.property(anyTtl, (ttlMs) => {
        const every = renewalIntervalMs(ttlMs);
        const startIn = keeperStartInMs(every);
        expect(startIn).toBeGreaterThan(0);
        expect(every - startIn).toBeGreaterThanOrEqual(every / 2);
        // Started then (the lease granted at 0), it renews one interval after the grant, not one
        // interval after its own start (a millisecond's rounding aside).
        const wait = firstRenewalInMs(ttlMs, every, startIn);
        expect(Math.abs(startIn + wait - every)).toBeLessThanOrEqual(2);
      }),
    );
    expect(keeperStartInMs(renewalIntervalMs(30_000))).toBe(5_000);
  });

  it('gives a kept lease at the default TTL a long heartbeat timeout, and a short lease a short one', () => {
    expect(sweepKeepsLease(30_000)).toBe(true);
    expect(keeperHeartbeatTimeoutMs(30_000)).toBe(120_000);
    expect(sweepKeepsLease(5_000)).toBe(false);
    expect(keeperHeartbeatTimeoutMs(6_000)).toBe(3_000); // two 2 s intervals less 1 s
    // A slower sweep keeps fewer leases.
    expect(sweepKeepsLease(10_000, 5_000)).toBe(true);
    expect(sweepKeepsLease(10_000, 6_000)).toBe(false);
  });

  it('renews every third of the TTL, never more often than the latency floor', () => {
    expect(renewalIntervalMs(30_000)).toBe(10_000);
    expect(renewalIntervalMs(90)).toBe(50);
  });
});

describe("a keeper's first renewal", () => {
  const renewEveryMs = 1_000; // a 3 s lease
  it('comes one interval after the grant, however late the keeper starts', () => {
    const grantedAt = 10_000;
    const leaseUntil = grantedAt + 3_000;
    // Started at once: a whole interval. Started 700 ms late: the 300 ms left of it.
    expect(firstRenewalInMs(leaseUntil, renewEveryMs, grantedAt)).toBe(1_000);
    expect(firstRenewalInMs(leaseUntil, renewEveryMs, grantedAt + 700)).toBe(300);
    // Started after the interval (a slow link to Temporal): at once, not a second later.
    expect(firstRenewalInMs(leaseUntil, renewEveryMs, grantedAt + 1_600)).toBe(0);
    expect(firstRenewalInMs(leaseUntil, renewEveryMs, grantedAt + 5_000)).toBe(0);
  });

  it('never waits past the lease, for any start', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 50, max: 60_000 }),
        fc.integer({ min: -120_000, max: 120_000 }),
        (every, offset) => {
          const leaseUntil = 1_000_000;
          const now = leaseUntil - every * 3 + offset;
          const wait = firstRenewalInMs(leaseUntil, every, now);
          expect(wait).toBeGreaterThanOrEqual(0);
          expect(wait).toBeLessThanOrEqual(every);
          if (leaseUntil > now) expect(now + wait).toBeLessThan(leaseUntil);
        },
      ),
    );
  });
});
