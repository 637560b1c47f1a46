import fc from 'fast-check';
import { retryBudgetSchema } from '../../policy/decisions/acquireRequest';
import { decorrelatedJitter } from '../../policy/decisions/backoff';
import { LATENCY_FLOOR_MS } from '../../policy/constants';
import { boundRetryDelay } from '../../policy/decisions/guardrails';

const budget = retryBudgetSchema.parse({
  maxRetries: 5,
  maxTotalWaitMs: 10_000,
  maxBackoffMs: 2_000,
  baseBackoffMs: 100,
});

describe('boundRetryDelay', () => {
  it('raises a delay below the 50 ms floor to the floor', () => {
    expect(boundRetryDelay(3, { attempts: 1, elapsedMs: 0 }, budget)).toEqual({
      kind: 'sleep',
      sleepMs: 50,
      requestedMs: 3,
      clamped: true,
    });
  });

  it('caps a delay at the configured maximum backoff', () => {
    expect(boundRetryDelay(60_000, { attempts: 1, elapsedMs: 0 }, budget)).toMatchObject({
      sleepMs: 2_000,
      clamped: true,
    });
  });

  it('caps a delay at what is left of the total wait budget', () => {
    expect(boundRetryDelay(1_500, { attempts: 2, elapsedMs: 9_200 }, budget)).toMatchObject({
      sleepMs: 800,
      clamped: true,
    });
  });

  it('passes a delay inside the bounds through unchanged', () => {
    expect(boundRetryDelay(700, { attempts: 2, elapsedMs: 1_000 }, budget)).toMatchObject({
      sleepMs: 700,
      clamped: false,
    });
  });

  it('stops once max_retries retries have been made', () => {
    expect(boundRetryDelay(100, { attempts: 6, elapsedMs: 0 }, budget)).toEqual({
      kind: 'stop',
      why: 'max-retries',
    });
    expect(boundRetryDelay(100, { attempts: 5, elapsedMs: 0 }, budget).kind).toBe('sleep');
  });

  it('stops when less than the floor is left of the total wait budget', () => {
    expect(boundRetryDelay(100, { attempts: 1, elapsedMs: 9_951 }, budget)).toEqual({
      kind: 'stop',
      why: 'max-total-wait',
    });
  });

  it('never sleeps outside [floor, min(max backoff, remaining budget)] for any request and any budget', () => {
    const anyRequest = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(NaN, Infinity, -Infinity, -1, 0));
    const anyBudget = fc
      .record({
        maxRetries: fc.integer({ min: 0, max: 100 }),
        maxTotalWaitMs: fc.integer({ min: 1, max: 3_600_000 }),
        maxBackoffMs: fc.integer({ min: 50, max: 600_000 }),
      })
      .map((b) => retryBudgetSchema.parse({ ...b, baseBackoffMs: 50 }));
    fc.assert(
      fc.property(
        anyRequest,
        anyBudget,
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 0, max: 4_000_000 }),
        (requested, b, attempts, elapsedMs) => {
          const next = boundRetryDelay(requested, { attempts, elapsedMs }, b);
          if (next.kind === 'stop')
            return attempts - 1 >= b.maxRetries || b.maxTotalWaitMs - elapsedMs < LATENCY_FLOOR_MS;
          return (
            Number.isInteger(next.sleepMs) &&
            next.sleepMs >= LATENCY_FLOOR_MS &&
            next.sleepMs <= b.maxBackoffMs &&
            next.sleepMs <= b.maxTotalWaitMs - elapsedMs
          );
        },
      ),
    );
  });
});

describe('decorrelatedJitter', () => {
  it('draws from [base, 3 x previous] and respects the cap', () => {
    const step = { previousMs: 400, baseMs: 100, capMs: 1_000 };
    expect(decorrelatedJitter(step, () => 0)).toBe(100);
    expect(decorrelatedJitter(step, () => 0.5)).toBe(650);
    expect(decorrelatedJitter(step, () => 0.9999)).toBe(1_000);
  });

  it('draws each delay from the injected random only, within its bounds', () => {
    const sequence = (seed: number) => {
      let state = seed;
      const random = () => (state = (state * 16807) % 2147483647) / 2147483647;
      let previous = 100;
      return Array.from(
        { length: 8 },
        () => (previous = decorrelatedJitter({ previousMs: previous, baseMs: 100, capMs: 5_000 }, random)),
      );
    };
    const ambient = jest.spyOn(Math, 'random');
    try {
      const drawn = sequence(42);
      // Each delay within decorrelated jitter's bounds of the one before it: [base, min(cap, 3 x previous)].
      drawn.forEach((ms, i) => {
        const previous = i === 0 ? 100 : drawn[i - 1]!;
        expect(ms).toBeGreaterThanOrEqual(100);
        expect(ms).toBeLessThanOrEqual(Math.min(5_000, 3 * previous));
      });
      expect(sequence(43)).not.toEqual(drawn);
      expect(ambient).not.toHaveBeenCalled();
    } finally {
      ambient.mockRestore();
    }
  });
});
