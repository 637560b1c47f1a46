/**
 * One wait-for edge: `waiter` waits for `key`, which `holder` holds. Waiter and holder are owners,
 * threads of control (see tryAcquire's `owner`); `requester` names the waiting session on `key`.
 * Edges recorded before owners existed name requesters as waiter and holder, and no `requester`.
 */
export interface WaitForEdge {
  waiter: string;
  key: string;
  holder: string;
  requester?: string;
}

/** The requester of the session that waits on an edge's key. */
export function waitingRequester(edge: WaitForEdge): string {
  return edge.requester ?? edge.waiter;
}

/**
 * Whether the contention involves several interacting locks: the owner's edges name more than one
 * key. Only then is the larger model asked (as the retry harness advises); a FIFO waiter on a single key is the small
 * model's case, however long its queue.
 */
export function spansSeveralKeys(edges: readonly WaitForEdge[]): boolean {
  return new Set(edges.map((e) => e.key)).size > 1;
}

/** A cycle of waits, readable: "alpha waits for b held by beta; beta waits for a held by alpha". */
export function describeCycle(cycle: readonly WaitForEdge[]): string {
  return cycle.map((e) => `${e.waiter} waits for ${e.key} held by ${e.holder}`).join('; ');
}

/**
 * Builds wait-for edges from a lock service's live holdings and queue tickets. An edge is real only
 * when the thing that waits is also a thing that holds: one owner. A ticket or a lease without an
 * owner belongs to a session alone, and a session never holds while it waits, so it makes no edge; a
 * requester name reused on several keys joins nothing. An owner waiting for a key it holds itself
 * (through another session) is a cycle of one, and a true deadlock.
 */
export function waitForEdges(
  holdings: { key: string; holder: string; owner: string | null }[],
  waits: { key: string; requester: string; owner: string | null }[],
): WaitForEdge[] {
  const ownerOf = new Map(holdings.flatMap((h) => (h.owner === null ? [] : [[h.key, h.owner] as const])));
  return waits.flatMap((w) => {
    const holder = ownerOf.get(w.key);
    return holder !== undefined && w.owner !== null
      ? [{ waiter: w.owner, key: w.key, holder, requester: w.requester }]
      : [];
  });
}

/**
 * The part of the wait-for graph a session's decision reads: the edges reachable from `owner`
 * (every cycle through it lies among them) and the edges into it (who waits for what it holds). The
 * rest of the graph, which grows with every waiter of every key, is never sent to the session: it
 * would be recorded in the session's history at every attempt. Keeps the edges' order, so a cycle is
 * found in the same order as in the whole graph.
 */
export function edgesAround(owner: string, edges: readonly WaitForEdge[]): WaitForEdge[] {
  const outgoing = new Map<string, string[]>();
  for (const e of edges) outgoing.set(e.waiter, [...(outgoing.get(e.waiter) ?? []), e.holder]);
  const reachable = new Set([owner]);
  const pending = [owner];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    for (const next of outgoing.get(node) ?? []) {
      if (!reachable.has(next)) {
        reachable.add(next);
        pending.push(next);
      }
    }
  }
  return edges.filter((e) => reachable.has(e.waiter) || e.holder === owner);
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
