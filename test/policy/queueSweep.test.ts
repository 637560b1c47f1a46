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

  it('takes out a head seen stalled at more sweeps in a row than allowed, and wakes the one behind it', () => {
    const queue = { key: 'k', waiters: ['a', 'b'] };
    let verdict = queuesToWake(NOTHING_SEEN, [queue], [], 3);
    for (let sweep = 2; sweep <= 3; sweep++) {
      verdict = queuesToWake(verdict.seen, [queue], [], 3);
      expect(verdict.unresponsive).toEqual([]);
      expect(verdict.wake).toEqual([queue]);
    }
    verdict = queuesToWake(verdict.seen, [queue], [], 3);
    expect(verdict.unresponsive).toEqual([{ key: 'k', requester: 'a' }]);
    expect(verdict.wake).toEqual([{ key: 'k', waiters: ['b'] }]);
    // The new head has its own count: seen anew at the next sweep, it is woken, not taken out.
    verdict = queuesToWake(verdict.seen, [{ key: 'k', waiters: ['b'] }], [], 3);
    expect(verdict.unresponsive).toEqual([]);
  });

  it('starts the count again when the head changes or the key is held in between', () => {
    const queue = { key: 'k', waiters: ['a', 'b'] };
    let verdict = queuesToWake(NOTHING_SEEN, [queue], [], 2);
    verdict = queuesToWake(verdict.seen, [queue], [], 2);
    verdict = queuesToWake(verdict.seen, [], [], 2); // held: the queue moved
    for (let sweep = 0; sweep < 2; sweep++) {
      verdict = queuesToWake(verdict.seen, [queue], [], 2);
      expect(verdict.unresponsive).toEqual([]);
    }
    verdict = queuesToWake(verdict.seen, [{ key: 'k', waiters: ['b', 'a'] }], [], 2);
    expect(verdict.unresponsive).toEqual([]);
  });

  it('takes nobody out by default', () => {
    let verdict = queuesToWake(NOTHING_SEEN, [{ key: 'k', waiters: ['a'] }]);
    for (let sweep = 0; sweep < 100; sweep++)
      verdict = queuesToWake(verdict.seen, [{ key: 'k', waiters: ['a'] }]);
    expect(verdict.unresponsive).toEqual([]);
    expect(verdict.wake).toEqual([{ key: 'k', waiters: ['a'] }]);
  });
});
