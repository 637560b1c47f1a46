import fc from 'fast-check';
import {
  cycleThrough,
  edgesAround,
  spansSeveralKeys,
  type WaitForEdge,
  waitForEdges,
} from '../../policy/lockContract/waitForGraph';

const edge = (waiter: string, key: string, holder: string): WaitForEdge => ({ waiter, key, holder });

describe('the wait-for graph a session is sent', () => {
  it('is the edges around the owner, not every waiter of every key', () => {
    // 1,000 keys, each held, each with 10 waiters, all owned: 10,000 edges in the whole graph.
    const holdings = Array.from({ length: 1_000 }, (_, k) => ({
      key: `k${k}`,
      holder: `h${k}`,
      owner: `k${k}-holder`,
    }));
    const waits = holdings.flatMap(({ key }) =>
      Array.from({ length: 10 }, (_, w) => ({ key, requester: `r${w}`, owner: `${key}-w${w}` })),
    );
    const all = waitForEdges(holdings, waits);
    expect(all).toHaveLength(10_000);
    expect(edgesAround('k7-w3', all)).toEqual([
      { waiter: 'k7-w3', key: 'k7', holder: 'k7-holder', requester: 'r3' },
    ]);
  });

  it('joins a wait and a holding by owner only: requester names reused on every key make no edge', () => {
    // 100 keys, each held by w0..w9 in turn and waited for by the other nine: the names repeat on
    // every key, as a user who names requesters by replica would, and no session holds while it waits.
    const names = Array.from({ length: 10 }, (_, i) => `w${i}`);
    const holdings = Array.from({ length: 100 }, (_, k) => ({
      key: `k${k}`,
      holder: names[k % 10]!,
      owner: null,
    }));
    const waits = holdings.flatMap(({ key, holder }) =>
      names.filter((n) => n !== holder).map((requester) => ({ key, requester, owner: null })),
    );
    expect(waitForEdges(holdings, waits)).toEqual([]);
    // One parent that holds ka and asks for kb, another that holds kb and asks for ka: a true cycle,
    // whatever the sessions' requester names.
    const inversion = waitForEdges(
      [
        { key: 'ka', holder: 'w1', owner: 'parent-1' },
        { key: 'kb', holder: 'w1', owner: 'parent-2' },
        { key: 'kc', holder: 'w2', owner: null },
      ],
      [
        { key: 'kb', requester: 'w2', owner: 'parent-1' },
        { key: 'ka', requester: 'w2', owner: 'parent-2' },
        { key: 'kc', requester: 'w1', owner: 'parent-1' }, // behind a session alone: a dead end
      ],
    );
    expect(cycleThrough('parent-1', inversion)).toEqual([
      { waiter: 'parent-1', key: 'kb', holder: 'parent-2', requester: 'w2' },
      { waiter: 'parent-2', key: 'ka', holder: 'parent-1', requester: 'w2' },
    ]);
    // An owner that asks, through another session, for a key it holds waits for itself.
    const self = waitForEdges(
      [{ key: 'ka', holder: 'first', owner: 'job' }],
      [{ key: 'ka', requester: 'second', owner: 'job' }],
    );
    expect(cycleThrough('job', self)).toEqual([
      { waiter: 'job', key: 'ka', holder: 'job', requester: 'second' },
    ]);
  });

  it("asks for the larger model only when the owner's waits span several keys", () => {
    expect(spansSeveralKeys([])).toBe(false);
    // A long FIFO queue on one key: many edges, one key.
    expect(spansSeveralKeys([edge('a', 'k1', 'b'), edge('c', 'k1', 'b'), edge('a', 'k1', 'd')])).toBe(false);
    expect(spansSeveralKeys([edge('a', 'k1', 'b'), edge('b', 'k2', 'a')])).toBe(true);
  });

  it('keeps a cycle through the requester, the chain it waits behind, and who waits for it', () => {
    const all = [
      edge('a', 'kb', 'b'),
      edge('b', 'kc', 'c'),
      edge('c', 'ka', 'a'), // a → b → c → a
      edge('x', 'ka', 'a'), // x waits for a: into a
      edge('y', 'kx', 'x'), // y waits for x: neither reachable from a nor into a
      edge('d', 'ke', 'e'),
    ];
    expect(edgesAround('a', all)).toEqual(all.slice(0, 4));
    expect(cycleThrough('a', edgesAround('a', all))).toEqual(all.slice(0, 3));
  });

  it('finds the same cycle, and gives the decision the same edges, as the whole graph would', () => {
    const names = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g');
    const anyEdge = fc.record({ waiter: names, key: fc.constantFrom('k1', 'k2', 'k3', 'k4'), holder: names });
    fc.assert(
      fc.property(fc.array(anyEdge, { maxLength: 30 }), names, (all, me) => {
        const around = edgesAround(me, all);
        expect(cycleThrough(me, around)).toEqual(cycleThrough(me, all));
        // What the retry decision reads (policy/decisions/decisionContext.ts): the edges that touch the requester.
        const touching = (edges: WaitForEdge[]) => edges.filter((e) => e.waiter === me || e.holder === me);
        expect(touching(around)).toEqual(touching(all));
      }),
    );
  });
});
