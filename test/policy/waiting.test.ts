// How long a parked waiter sleeps, and how long its ticket lives: the waiting protocol's pure rules.
import { retryBudgetSchema } from '../../policy/decisions/acquireRequest';
import { MAX_QUEUE_TICKET_MS } from '../../policy/lockContract/lockTerms';
import { parkStepFor, parkUntilTold, TICKET_GRACE_MS, ticketSpanMs } from '../../policy/decisions/waiting';

const budget = retryBudgetSchema.parse({ maxRetries: 1_000, maxTotalWaitMs: 24 * 60 * 60 * 1000 });

describe('how long a parked waiter sleeps', () => {
  it("until what is left of its budget runs out, head of the queue or not: not the holder's lease end, not a back-off step", () => {
    // The back-off cap (maxBackoffMs) bounds a poll, not a park.
    expect(parkUntilTold({ attempts: 1, elapsedMs: 0 }, budget)).toMatchObject({
      kind: 'sleep',
      sleepMs: budget.maxTotalWaitMs,
    });
    expect(parkUntilTold({ attempts: 3, elapsedMs: 60_000 }, budget)).toMatchObject({
      kind: 'sleep',
      sleepMs: budget.maxTotalWaitMs - 60_000,
    });
  });

  it('stops once the budget is spent: time or retries', () => {
    const short = { ...budget, maxTotalWaitMs: 10_000 };
    expect(parkUntilTold({ attempts: 2, elapsedMs: 10_000 }, short).kind).toBe('stop');
    const few = { ...budget, maxRetries: 1 };
    expect(parkUntilTold({ attempts: 2, elapsedMs: 0 }, few).kind).toBe('stop');
  });
});

describe("a model's delay and the park", () => {
  const untilTold = parkUntilTold({ attempts: 1, elapsedMs: 0 }, budget);

  it("ends the park at a model's delay shorter than the holder's lease left, or when no holder is known", () => {
    expect(parkStepFor(untilTold, 1_100, 30_000)).toMatchObject({ sleepMs: 1_100, parkEndsAtDelay: true });
    expect(parkStepFor(untilTold, 1_100, null)).toMatchObject({ sleepMs: 1_100, parkEndsAtDelay: true });
  });

  it('keeps the park until told when the wake-up is expected first, or no model gave a delay', () => {
    expect(parkStepFor(untilTold, 30_000, 1_100)).toBe(untilTold);
    expect(parkStepFor(untilTold, null, 30_000)).toBe(untilTold);
    const spent = parkUntilTold({ attempts: 1_002, elapsedMs: 0 }, budget);
    expect(parkStepFor(spent, 1_100, 30_000)).toBe(spent);
  });
});

describe("how long a parked waiter's ticket lives", () => {
  it('as long as the session waits (its budget or its escalation, whichever is longer), and a minute more, capped', () => {
    expect(ticketSpanMs(60_000, 300_000)).toBe(300_000 + TICKET_GRACE_MS);
    expect(ticketSpanMs(3_600_000, 300_000)).toBe(3_600_000 + TICKET_GRACE_MS);
    expect(ticketSpanMs(-5_000, 0)).toBe(TICKET_GRACE_MS);
    expect(ticketSpanMs(Number.MAX_SAFE_INTEGER, 0)).toBe(MAX_QUEUE_TICKET_MS);
  });
});
