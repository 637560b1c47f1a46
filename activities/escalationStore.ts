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

/** How the file store keeps itself bounded, and whom it tells of a line it cannot read. */
export interface FileEscalationStoreOptions {
  /**
   * The file's size past which it is rotated to `<file>.1` (the previous `.1` is dropped), so a read
   * costs at most two such files: DEFAULT_ESCALATION_FILE_MAX_BYTES when absent.
   */
  maxBytes?: number;
  /** Called with the count of lines skipped in a read (torn by a crash mid-write, or not JSON). */
  onSkippedLines?: (count: number, file: string) => void;
}

/** 4 MiB: some four thousand escalations in each of the two generations a read covers. */
export const DEFAULT_ESCALATION_FILE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * An append-only JSON-lines file: readable with `tail -f`, and enough for one host's worker. It is
 * rotated by size (the current file and the one before it are read), and a line that is not a whole
 * record (a worker killed mid-write) is skipped and counted, never a failed read.
 */
export class FileEscalationStore implements EscalationStore {
  private readonly maxBytes: number;

  constructor(
    private readonly file: string,
    private readonly options: FileEscalationStoreOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_ESCALATION_FILE_MAX_BYTES;
  }

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
    const text = (await readIfThere(`${this.file}.1`)) + (await readIfThere(this.file));
    let skipped = 0;
    const records = text
      .split('\n')
      .filter(Boolean)
      .flatMap((line) => {
        const record = parsedRecord(line);
        if (!record) skipped++;
        return record ? [record] : [];
      });
    if (skipped) this.options.onSkippedLines?.(skipped, this.file);
    return records.filter((e) => e.key === key);
  }

  private async append(line: EscalationRecord | ResolutionRecord): Promise<void> {
    await fs.mkdir(path.dirname(this.file), { recursive: true });
    const size = await fs.stat(this.file).then(
      (stat) => stat.size,
      () => 0,
    );
    if (size >= this.maxBytes) await fs.rename(this.file, `${this.file}.1`);
    // One write per record, on a line of its own: after a torn write the record starts a new line,
    // so the torn line stays one bad line and this one is whole.
    const fresh = size === 0 || size >= this.maxBytes || (await endsLine(this.file, size));
    await fs.appendFile(this.file, `${fresh ? '' : '\n'}${JSON.stringify(line)}\n`);
  }
}

// Whether the file's last byte ends a line.
async function endsLine(file: string, size: number): Promise<boolean> {
  const handle = await fs.open(file, 'r');
  try {
    const { buffer } = await handle.read(Buffer.alloc(1), 0, 1, size - 1);
    return buffer[0] === 0x0a;
  } finally {
    await handle.close();
  }
}

async function readIfThere(file: string): Promise<string> {
  const text = await fs.readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  // A file that does not end its last line (a torn write) gets the line ended here, so the next
  // file's first record is not glued to it.
  return text && !text.endsWith('\n') ? `${text}\n` : text;
}

// A line as a record, or null when it is not one (torn, or not lockwarden's).
function parsedRecord(line: string): EscalationRecord | ResolutionRecord | null {
  try {
    const record = JSON.parse(line) as Partial<EscalationRecord> | null;
    return record && typeof record.key === 'string' && typeof record.at === 'string'
      ? (record as EscalationRecord | ResolutionRecord)
      : null;
  } catch {
    return null;
  }
}
