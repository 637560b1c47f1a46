import { retryBudgetSchema } from '../../policy/decisions/acquireRequest';
import { LATENCY_FLOOR_MS } from '../../policy/constants';
import { denial, SESSION_QUEUE_TICKET_MS } from '../../policy/lockContract/lockSchemas';
import { parkFor, ticketRefreshMs } from '../../policy/decisions/waiting';

const budget = retryBudgetSchema.parse({ maxRetries: 1_000, maxTotalWaitMs: 24 * 60 * 60 * 1000 });
const progress = { attempts: 1, elapsedMs: 0 };
const queued = (position: number | null, holderLeaseUntil: number | null) =>
  denial('HELD', { holder: 'h', holderLeaseUntil, waiters: 5, position, serviceTime: 1_000 });

describe('how long a parked waiter sleeps', () => {
  it("the head and the one behind it watch the holder's lease end", () => {
    for (const place of [1, 2]) {
      const step = parkFor(queued(place, 31_000), SESSION_QUEUE_TICKET_MS, progress, budget);
      expect(step).toMatchObject({ kind: 'sleep', sleepMs: 30_000 + LATENCY_FLOOR_MS });
    }
  });

  it('a waiter further back sleeps until its ticket needs refreshing, not until the lease ends', () => {
    const step = parkFor(queued(3, 31_000), SESSION_QUEUE_TICKET_MS, progress, budget);
    expect(step).toMatchObject({ kind: 'sleep', sleepMs: ticketRefreshMs(SESSION_QUEUE_TICKET_MS) });
    expect(ticketRefreshMs(SESSION_QUEUE_TICKET_MS)).toBeGreaterThanOrEqual(30 * 60 * 1000);
  });

  it('a head with no known lease end, and any waiter, is bounded by what is left of the budget', () => {
    expect(parkFor(queued(1, null), SESSION_QUEUE_TICKET_MS, progress, budget)).toMatchObject({
      sleepMs: ticketRefreshMs(SESSION_QUEUE_TICKET_MS),
    });
    const short = { ...budget, maxTotalWaitMs: 10_000 };
    expect(parkFor(queued(3, 31_000), SESSION_QUEUE_TICKET_MS, progress, short)).toMatchObject({
      kind: 'sleep',
      sleepMs: 10_000,
    });
    const spent = parkFor(
      queued(3, 31_000),
      SESSION_QUEUE_TICKET_MS,
      { attempts: 2, elapsedMs: 10_000 },
      short,
    );
    expect(spent.kind).toBe('stop');
  });
});
