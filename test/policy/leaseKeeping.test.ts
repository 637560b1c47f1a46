import fc from 'fast-check';
import { keeperHeartbeatTimeoutMs, renewalIntervalMs } from '../../policy/leaseKeeping';

describe("the lease keeper's timing", () => {
  it('replaces a dead keeper before the lease it last renewed runs out, at every TTL from 200 ms', () => {
    fc.assert(
      fc.property(fc.integer({ min: 200, max: 24 * 60 * 60 * 1000 }), (ttlMs) => {
        const every = renewalIntervalMs(ttlMs);
        const timeout = keeperHeartbeatTimeoutMs(every);
        // Worst case: the last renewal one interval before the worker died, the last heartbeat the
        // server got at the moment it died; the retried keeper needs a moment to be dispatched.
        const leaseLeftAtDeath = ttlMs - every;
        const dispatchMs = Math.min(500, every / 4);
        expect(timeout + dispatchMs).toBeLessThan(leaseLeftAtDeath);
        // And a live keeper, heartbeating after each renewal, is never timed out between two.
        expect(timeout).toBeGreaterThan(every);
      }),
    );
  });

  it('renews every third of the TTL, never more often than the latency floor', () => {
    expect(renewalIntervalMs(30_000)).toBe(10_000);
    expect(renewalIntervalMs(90)).toBe(50);
  });
});
