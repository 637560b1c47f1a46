// Where escalations are kept on the worker: a JSON-lines file of notices and resolutions.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { WaitForEdge } from '../policy/lockContract/waitForGraph';

/** An escalation as a session reports it to the on-call activity. */
export interface EscalationNotice {
  key: string;
  requester: string;
  workflowId: string;
  reason: string;
  deadlock: boolean;
  /** The cycle of waits, when the harness found the deadlock (absent when a model suspected one). */
  cycle?: WaitForEdge[];
  attempts: number;
  waitedMs: number;
  /** Whom the page is for, as the request's constraints named it ("escalate to #payments-oncall"). */
  contact?: string;
  /** The contention as the session last saw it: what on-call needs to act without opening the UI. */
  contention?: EscalationContention;
}

/** The contention an escalation happens in, from the lock service's last denial and the session's state. */
export interface EscalationContention {
  /** Who holds the key (a requester name), or null when no one does or the service could not say. */
  holder: string | null;
  /** The last denial's code (`HELD`, `QUEUED`, `UNAVAILABLE`, ...). */
  errorCode: string;
  /** The session's place in the key's queue, or null without one. */
  place: number | null;
  /** The other waiters the service counted. */
  waiters: number;
  /** What is left of the session's budget. */
  budgetLeft: { retries: number; waitMs: number };
  /** The last three decisions, oldest first. */
  lastDecisions: { attempt: number; provider: string; decision: string; retryAfterMs: number | null }[];
}

/** One escalation, as recorded for operators and for the starvation monitor. */
export interface EscalationRecord extends EscalationNotice {
  at: string;
}

/** An escalation that ended without an operator: the waiter acquired the lock after a release. */
export interface EscalationResolution extends EscalationNotice {
  resolution: 'acquired';
}

/** A resolution as recorded, next to the escalation it ends (same workflow id). */
export interface ResolutionRecord extends EscalationResolution {
  at: string;
}

/** Where escalations are kept; `recentForKey` feeds the starvation monitor. */
export interface EscalationStore {
  record(escalation: EscalationRecord): Promise<void>;
  /** Records that an escalation resolved itself; not counted by `recentForKey`. */
  recordResolution(resolution: ResolutionRecord): Promise<void>;
  /** How many escalations of `key` happened at or after `since`. */
  recentForKey(key: string, since: Date): Promise<number>;
  /** Every escalation and resolution of `key`, in the order they were recorded. */
  recordsOf(key: string): Promise<(EscalationRecord | ResolutionRecord)[]>;
}

/** An append-only JSON-lines file: readable with `tail -f`, and enough for one host's worker. */
export class FileEscalationStore implements EscalationStore {
  constructor(private readonly file: string) {}

  record(escalation: EscalationRecord): Promise<void> {
    return this.append(escalation);
  }

  recordResolution(resolution: ResolutionRecord): Promise<void> {
    return this.append(resolution);
  }

  async recentForKey(key: string, since: Date): Promise<number> {
    return (await this.recordsOf(key)).filter((e) => !('resolution' in e) && new Date(e.at) >= since).length;
  }

  async recordsOf(key: string): Promise<(EscalationRecord | ResolutionRecord)[]> {
    const text = await fs.readFile(this.file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return '';
      throw error;
    });
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as EscalationRecord | ResolutionRecord)
      .filter((e) => e.key === key);
  }

  private async append(line: EscalationRecord | ResolutionRecord): Promise<void> {
    await fs.mkdir(path.dirname(this.file), { recursive: true });
    await fs.appendFile(this.file, JSON.stringify(line) + '\n');
  }
}
