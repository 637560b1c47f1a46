// One watch per worker process on the sessions its keepers renew for: which of them ended without
// releasing (terminated, timed out, failed, reset), from one visibility query an interval.
import { setTimeout as delay } from 'node:timers/promises';

/**
 * How far back each query looks before the previous one's start: visibility is written after the
 * run closes (on Elasticsearch, a second or so later), and a run indexed late must still be seen.
 */
const LOOKBACK_MS = 10_000;

/** The watch's interval bounds: no tighter than a second, no looser than the sweep's 5 s. */
const FASTEST_MS = 1_000;
const SLOWEST_MS = 5_000;

/**
 * The runs of sessions that closed abnormally since `since` (terminated, timed out or failed: a
 * session that completes or is cancelled ends its own hold), or null when Temporal cannot say now.
 */
export type ClosedSessionRuns = (since: Date) => Promise<string[] | null>;

/**
 * Tells each keeper in this process when its session's run has ended without releasing. A keeper
 * cannot learn it from its own heartbeats in time (the SDK sends them a minute apart), and asking
 * Temporal before every renewal costs the server a call a holder each interval (1,000 holders at the
 * default TTL took a quarter of the dev server's CPU: bench/results/scale-sqlite-holders.md). One
 * query an interval for the whole process, answered with only the sessions that ended abnormally,
 * costs what hand-offs cost, never what holders or waiters do. It runs while a keeper is watched, at
 * the shortest renewal interval among them (within FASTEST_MS and SLOWEST_MS).
 */
export class SessionEndWatch {
  private readonly watched = new Map<string, { everyMs: number; ended: () => void }>();
  private running = false;

  constructor(private readonly closedRuns: ClosedSessionRuns) {}

  /** Watches the run `runId`; `ended` is called once it is seen closed. Answers the unwatch. */
  watch(runId: string, everyMs: number, ended: () => void): () => void {
    const entry = { everyMs, ended };
    this.watched.set(runId, entry);
    if (!this.running) void this.run();
    return () => {
      if (this.watched.get(runId) === entry) this.watched.delete(runId);
    };
  }

  private async run(): Promise<void> {
    this.running = true;
    let since = Date.now() - LOOKBACK_MS;
    try {
      while (this.watched.size) {
        const everyMs = Math.min(...[...this.watched.values()].map((w) => w.everyMs));
        await delay(Math.max(FASTEST_MS, Math.min(SLOWEST_MS, everyMs)), undefined, { ref: false });
        const askedAt = Date.now();
        const closed = await this.closedRuns(new Date(since)).catch(() => null);
        if (closed === null) continue; // asked again, from the same point, at the next interval
        for (const runId of closed) this.watched.get(runId)?.ended();
        since = askedAt - LOOKBACK_MS;
      }
    } finally {
      this.running = false;
    }
  }
}
