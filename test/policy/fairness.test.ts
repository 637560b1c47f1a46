import fc from 'fast-check';
import { describeOvertaking, overtakings } from '../../policy/lockContract/fairness';

describe('the fairness monitor', () => {
  it('sees nothing wrong in a queue in arrival order, whatever the priorities', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ priority: fc.integer({ min: 0, max: 3 }), since: fc.nat() })),
        (tickets) => {
          // The order the services keep: higher priority first, then earlier arrival.
          const queue = tickets
            .map((t, i) => ({ ...t, requester: `w${i}` }))
            .sort((a, b) => b.priority - a.priority || a.since - b.since);
          expect(overtakings('k', queue)).toEqual([]);
        },
      ),
    );
  });

  it('names each waiter a later arrival of its priority stands ahead of, on the service clock', () => {
    const queue = [
      { requester: 'young', priority: 0, since: 3_000 },
      { requester: 'old', priority: 0, since: 1_000 },
      { requester: 'middle', priority: 0, since: 2_000 },
      { requester: 'unknown', priority: 0, since: null },
    ];
    expect(overtakings('k', queue)).toEqual([
      { key: 'k', waiter: 'old', waiterSince: 1_000, overtakenBy: 'young', overtakerSince: 3_000 },
      { key: 'k', waiter: 'middle', waiterSince: 2_000, overtakenBy: 'young', overtakerSince: 3_000 },
    ]);
    // A higher priority ahead is the policy, not a violation.
    expect(
      overtakings('k', [
        { requester: 'urgent', priority: 5, since: 3_000 },
        { requester: 'old', priority: 0, since: 1_000 },
      ]),
    ).toEqual([]);
    expect(describeOvertaking(overtakings('k', queue)[0]!)).toBe(
      'fairness-violation: young (queued at 1970-01-01T00:00:03.000Z) was put ahead of old (queued at 1970-01-01T00:00:01.000Z) on k',
    );
  });
});
