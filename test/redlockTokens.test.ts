// Can a quorum of independent Redis masters (Redlock's setting) issue a fencing token that only rises?
// Two designs, modelled over the masters' counters, and the runs that break them: the counterexamples
// docs/lock-services.md ("Redlock") cites. No server: what is at stake is which values can be read.
import fc from 'fast-check';

/** One Redis master's token counter: what it answers now, and what would survive its crash. */
interface Master {
  counter: number;
  /** The value on disk: with appendfsync always, every acknowledged write; with everysec, maybe less. */
  durable: number;
}

const masters = (...counters: number[]): Master[] => counters.map((c) => ({ counter: c, durable: c }));
const isMajority = (reached: number[], n: number) => new Set(reached).size > n / 2;

/**
 * Design 1, the obvious one: INCR the counter on every master reached (a majority, as Redlock takes
 * its lock) and use the largest answer.
 */
function majorityMaxIncr(cluster: Master[], reached: number[], fsyncAlways = true): number {
  if (!isMajority(reached, cluster.length)) throw new Error('not a majority');
  return Math.max(
    ...reached.map((i) => {
      const m = cluster[i]!;
      m.counter++;
      if (fsyncAlways) m.durable = m.counter;
      return m.counter;
    }),
  );
}

/**
 * Design 2, a quorum register (Attiya, Bar-Noy and Dolev): read the counters of one majority, take
 * the largest plus one, and write it to a majority (a script that keeps the larger value) before
 * using it. Any two majorities share a master, so a later read sees every token already used.
 */
function quorumRegister(
  cluster: Master[],
  readFrom: number[],
  writeTo: number[],
  fsyncAlways = true,
): number {
  if (!isMajority(readFrom, cluster.length) || !isMajority(writeTo, cluster.length))
    throw new Error('not a majority');
  const token = Math.max(...readFrom.map((i) => cluster[i]!.counter)) + 1;
  for (const i of writeTo) {
    const m = cluster[i]!;
    m.counter = Math.max(m.counter, token);
    if (fsyncAlways) m.durable = m.counter;
  }
  return token;
}

/** A master killed and restarted: it answers what it had on disk. */
function crash(cluster: Master[], i: number): void {
  cluster[i]!.counter = cluster[i]!.durable;
}

// Any majority of five masters, as a list of indexes.
const majorityOf5 = fc.subarray([0, 1, 2, 3, 4], { minLength: 3 });

describe('fencing tokens from a quorum of independent Redis masters', () => {
  it('design 1 (the largest INCR of a majority) issues a lower token after a higher one, with no fault at all', () => {
    // Master A's counter ran ahead: acquisitions that reached it but no majority still counted there.
    const cluster = masters(10, 0, 0, 0, 0);
    const first = majorityMaxIncr(cluster, [0, 1, 2]); // A, B, C
    const second = majorityMaxIncr(cluster, [2, 3, 4]); // C, D, E: A is slow to answer
    expect(first).toBe(11);
    expect(second).toBe(2);
    // The first holder, paused past its lease, still writes with 11: the resource takes it over 2.
    expect(second).toBeLessThan(first);
  });

  it('design 2 (read a majority, write max + 1 to a majority) rises over any majorities, while no master forgets a write', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(majorityOf5, majorityOf5), { minLength: 2, maxLength: 30 }), (steps) => {
        const cluster = masters(0, 0, 0, 0, 0);
        const tokens = steps.map(([readFrom, writeTo]) => quorumRegister(cluster, readFrom, writeTo));
        return tokens.every((t, i) => i === 0 || t > tokens[i - 1]!);
      }),
      { numRuns: 500 },
    );
  });

  it('design 2 issues a token twice when a master loses a write it acknowledged (a crash under appendfsync everysec)', () => {
    const cluster = masters(0, 0, 0, 0, 0);
    const first = quorumRegister(cluster, [0, 1, 2], [0, 1, 2], false); // written to A, B, C, not yet on disk
    crash(cluster, 2); // C restarts with what it had synced
    const second = quorumRegister(cluster, [2, 3, 4], [2, 3, 4], false); // C, D, E: none has seen it now
    expect(second).toBe(first);
  });

  it('design 2 issues one token to two acquirers that read before either writes (no fault: concurrency)', () => {
    const cluster = masters(5, 5, 5, 5, 5);
    // Both read before either writes: Redlock's lock is what would have kept them apart, and it
    // rests on the clocks and pauses fencing exists not to trust.
    const readA = Math.max(...[0, 1, 2].map((i) => cluster[i]!.counter)) + 1;
    const readB = Math.max(...[2, 3, 4].map((i) => cluster[i]!.counter)) + 1;
    expect(readA).toBe(readB);
  });

  it('design 2 rises again after a failover only if the promoted replica had every acknowledged write', () => {
    const cluster = masters(0, 0, 0, 0, 0);
    const first = quorumRegister(cluster, [0, 1, 2], [0, 1, 2]);
    // B's replica, promoted after B failed, had not received the write (replication is asynchronous).
    cluster[1] = { counter: 0, durable: 0 };
    crash(cluster, 0); // and A restarts, but A had synced: it keeps the write
    const afterFailover = quorumRegister(cluster, [1, 3, 4], [1, 3, 4]); // B', D, E: none saw it
    expect(afterFailover).toBe(first);
  });
});
