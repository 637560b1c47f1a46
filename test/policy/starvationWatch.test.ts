import { HighStarvationRisk } from '../../policy/decisions/starvationWatch';

describe('the starvation monitor on decisions that keep saying high', () => {
  it('flags a key once its high-risk decisions reach the threshold within the window, once a window', () => {
    const watch = new HighStarvationRisk(60_000, 3);
    expect(watch.note('k', 'high', 0)).toBeNull();
    expect(watch.note('k', 'medium', 1_000)).toBeNull();
    expect(watch.note('k', 'high', 2_000)).toBeNull();
    expect(watch.note('k', 'high', 3_000)).toBe(3);
    // Flagged: not again within the window, however many more say high.
    expect(watch.note('k', 'high', 4_000)).toBeNull();
    // Another key counts apart.
    expect(watch.note('other', 'high', 4_000)).toBeNull();
  });

  it('forgets high-risk decisions older than the window', () => {
    const watch = new HighStarvationRisk(10_000, 2);
    expect(watch.note('k', 'high', 0)).toBeNull();
    expect(watch.note('k', 'high', 20_000)).toBeNull();
    expect(watch.note('k', 'low', 25_000)).toBeNull();
    expect(watch.note('k', 'high', 29_000)).toBe(2);
    // A window after the flag, the key may be flagged again, once it has the count again.
    expect(watch.note('k', 'high', 40_000)).toBeNull();
    expect(watch.note('k', 'high', 41_000)).toBe(2);
  });
});
