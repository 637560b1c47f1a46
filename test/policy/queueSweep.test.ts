import { NOTHING_SEEN, queuesToWake } from '../../policy/lockContract/stalledQueues';

describe('which stalled queues a sweep wakes', () => {
  it('wakes a queue seen stalled behind the same head at two sweeps in a row, and none seen once', () => {
    const first = queuesToWake(NOTHING_SEEN, [{ key: 'k', waiters: ['a', 'b'] }]);
    expect(first.wake).toEqual([]);
    const second = queuesToWake(first.seen, [{ key: 'k', waiters: ['a', 'b'] }]);
    expect(second.wake).toEqual([{ key: 'k', waiters: ['a', 'b'] }]);
  });

  it('waits another sweep when the head changed (the queue moved) or the key was held in between', () => {
    const first = queuesToWake(NOTHING_SEEN, [{ key: 'k', waiters: ['a', 'b'] }]);
    expect(queuesToWake(first.seen, [{ key: 'k', waiters: ['b'] }]).wake).toEqual([]);
    const held = queuesToWake(first.seen, []);
    expect(held.seen.heads.size).toBe(0);
    expect(queuesToWake(held.seen, [{ key: 'k', waiters: ['a', 'b'] }]).wake).toEqual([]);
  });

  it('ignores a queue listed without waiters', () => {
    const once = queuesToWake(NOTHING_SEEN, [{ key: 'k', waiters: [] }]);
    expect(once.seen.heads.size).toBe(0);
    expect(queuesToWake(once.seen, [{ key: 'k', waiters: [] }]).wake).toEqual([]);
  });

  it('wakes at first sight a queue behind a lease it saw lapsing with nobody to keep it, while it may still lapse', () => {
    // Sweep 1 sees the lease running low, unkept, two sweeps from its end; the key is not free yet.
    const seenLapsing = queuesToWake(NOTHING_SEEN, [], [{ key: 'k', sweepsLeft: 2 }]);
    expect(seenLapsing.wake).toEqual([]);
    // Sweep 2: the lease ran out, and the queue is woken the first time it is seen stalled.
    const ranOut = queuesToWake(seenLapsing.seen, [{ key: 'k', waiters: ['a'] }]);
    expect(ranOut.wake).toEqual([{ key: 'k', waiters: ['a'] }]);
    // Woken once: it is forgotten, and a later stall of the key waits for two sightings again.
    expect(ranOut.seen.lapsing.has('k')).toBe(false);
    // Kept past its sweeps (a keeper came back and renewed it), the memory of it lapses too.
    let memory = seenLapsing.seen;
    for (let sweep = 0; sweep < 2; sweep++) memory = queuesToWake(memory, []).seen;
    expect(queuesToWake(memory, [{ key: 'k', waiters: ['a'] }]).wake).toEqual([]);
  });
});
