import fc from 'fast-check';
import { cycleThrough, edgesAround, type WaitForEdge, waitForEdges } from '../../policy/waitForGraph';

const edge = (waiter: string, key: string, holder: string): WaitForEdge => ({ waiter, key, holder });

describe('the wait-for graph a session is sent', () => {
  it('is the edges around the requester, not every waiter of every key', () => {
    // 1,000 keys, each held, each with 10 waiters: 10,000 edges in the whole graph.
    const holdings = Array.from({ length: 1_000 }, (_, k) => ({ key: `k${k}`, holder: `k${k}-holder` }));
    const waits = holdings.flatMap(({ key }) =>
      Array.from({ length: 10 }, (_, w) => ({ key, requester: `${key}-w${w}` })),
    );
    const all = waitForEdges(holdings, waits);
    expect(all).toHaveLength(10_000);
    expect(edgesAround('k7-w3', all)).toEqual([edge('k7-w3', 'k7', 'k7-holder')]);
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
        // What the retry decision reads (policy/decisionContext.ts): the edges that touch the requester.
        const touching = (edges: WaitForEdge[]) => edges.filter((e) => e.waiter === me || e.holder === me);
        expect(touching(around)).toEqual(touching(all));
      }),
    );
  });
});
