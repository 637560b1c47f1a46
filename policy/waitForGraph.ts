/** One wait-for edge: `waiter` waits for `key`, which `holder` holds. */
export interface WaitForEdge {
  waiter: string;
  key: string;
  holder: string;
}

/** A cycle of waits, readable: "alpha waits for b held by beta; beta waits for a held by alpha". */
export function describeCycle(cycle: readonly WaitForEdge[]): string {
  return cycle.map((e) => `${e.waiter} waits for ${e.key} held by ${e.holder}`).join('; ');
}

/** Builds wait-for edges from a lock service's live holdings and queue tickets. */
export function waitForEdges(
  holdings: { key: string; holder: string }[],
  waits: { key: string; requester: string }[],
): WaitForEdge[] {
  const holderOf = new Map(holdings.map((h) => [h.key, h.holder]));
  return waits.flatMap((w) => {
    const holder = holderOf.get(w.key);
    return holder && holder !== w.requester ? [{ waiter: w.requester, key: w.key, holder }] : [];
  });
}

/**
 * The part of the wait-for graph a session's decision reads: the edges reachable from `requester`
 * (every cycle through it lies among them) and the edges into it (who waits for what it holds). The
 * rest of the graph, which grows with every waiter of every key, is never sent to the session: it
 * would be recorded in the session's history at every attempt. Keeps the edges' order, so a cycle is
 * found in the same order as in the whole graph.
 */
export function edgesAround(requester: string, edges: readonly WaitForEdge[]): WaitForEdge[] {
  const outgoing = new Map<string, string[]>();
  for (const e of edges) outgoing.set(e.waiter, [...(outgoing.get(e.waiter) ?? []), e.holder]);
  const reachable = new Set([requester]);
  const pending = [requester];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    for (const next of outgoing.get(node) ?? []) {
      if (!reachable.has(next)) {
        reachable.add(next);
        pending.push(next);
      }
    }
  }
  return edges.filter((e) => reachable.has(e.waiter) || e.holder === requester);
}

/**
 * Finds a cycle of waits that passes through `start` (a deadlock it is part of), or null. The cycle
 * is returned as the edges in order, starting with one whose waiter is `start`.
 */
export function cycleThrough(start: string, edges: WaitForEdge[]): WaitForEdge[] | null {
  const outgoing = new Map<string, WaitForEdge[]>();
  for (const e of edges) outgoing.set(e.waiter, [...(outgoing.get(e.waiter) ?? []), e]);
  const visited = new Set<string>();
  const path: WaitForEdge[] = [];
  const walk = (node: string): boolean => {
    for (const edge of outgoing.get(node) ?? []) {
      path.push(edge);
      if (edge.holder === start) return true;
      if (!visited.has(edge.holder)) {
        visited.add(edge.holder);
        if (walk(edge.holder)) return true;
      }
      path.pop();
    }
    return false;
  };
  return walk(start) ? [...path] : null;
}
