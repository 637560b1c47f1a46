import { queuesToWake } from '../../policy/lockContract/stalledQueues';

describe('which stalled queues a sweep wakes', () => {
  it('wakes a queue seen stalled behind the same head at two sweeps in a row, and none seen once', () => {
    const first = queuesToWake(new Map(), [{ key: 'k', waiters: ['a', 'b'] }]);
    expect(first.wake).toEqual([]);
    const second = queuesToWake(first.seen, [{ key: 'k', waiters: ['a', 'b'] }]);
    expect(second.wake).toEqual([{ key: 'k', waiters: ['a', 'b'] }]);
  });

  it('waits another sweep when the head changed (the queue moved) or the key was held in between', () => {
    const first = queuesToWake(new Map(), [{ key: 'k', waiters: ['a', 'b'] }]);
    expect(queuesToWake(first.seen, [{ key: 'k', waiters: ['b'] }]).wake).toEqual([]);
    const held = queuesToWake(first.seen, []);
    expect(held.seen.size).toBe(0);
    expect(queuesToWake(held.seen, [{ key: 'k', waiters: ['a', 'b'] }]).wake).toEqual([]);
  });

  it('ignores a queue listed without waiters', () => {
    const once = queuesToWake(new Map(), [{ key: 'k', waiters: [] }]);
    expect(once.seen.size).toBe(0);
    expect(queuesToWake(once.seen, [{ key: 'k', waiters: [] }]).wake).toEqual([]);
  });
});
