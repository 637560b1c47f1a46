// The campaign workers' journal of lease events, and its reading back.
import fs from 'node:fs';
import path from 'node:path';
import type { LockService } from '../locks/lockService';

/**
 * One lease event the lock service answered, as a campaign worker journals it (service clock), and
 * each renewal and release as it is sent (the worker's clock, the same host's): a call whose answer
 * is lost (a dropped connection, a call that outlived its bound, a worker killed between the
 * service's commit and the journal's append) may still have been applied, and the checker must know
 * it was in flight.
 */
export type JournalEntry =
  | { op: 'grant'; key: string; holder: string; token: string; grantedAt: number; leaseUntil: number }
  | { op: 'renew-sent'; id: string; key: string; holder: string; token: string; at: number }
  | { op: 'renew'; id?: string; key: string; holder: string; token: string; leaseUntil: number; at: number }
  | { op: 'renew-refused'; id: string; at: number }
  | { op: 'release-sent'; id: string; key: string; holder: string; token: string; at: number }
  | { op: 'release'; id?: string; key: string; holder: string; token: string; at: number }
  | { op: 'release-refused'; id: string; at: number };

/**
 * A lock service that journals every grant, renewal and release it answers, one JSON line each,
 * appended before the answer returns: the checker rebuilds each key's leases on the service clock
 * from the journals of all workers. (A line is lost only if the process dies between the service's
 * commit and the append; the checker reports grants it saw written but not journaled.)
 */
export function journalingLocks(locks: LockService, file: string): LockService {
  const append = (entry: JournalEntry) => fs.appendFileSync(file, JSON.stringify(entry) + '\n');
  const journaled = Object.create(locks) as LockService;
  let sent = 0;
  journaled.tryAcquire = async (request) => {
    const attempt = await locks.tryAcquire(request);
    if (attempt.granted) append({ op: 'grant', ...attempt.lease });
    return attempt;
  };
  journaled.renew = async (target) => {
    const id = `${process.pid}-${++sent}`;
    const lease = { key: target.key, holder: target.holder, token: target.token };
    append({ op: 'renew-sent', id, ...lease, at: Date.now() });
    const result = await locks.renew(target);
    if (result.ok && result.leaseUntil !== undefined)
      append({
        op: 'renew',
        id,
        key: target.key,
        holder: target.holder,
        token: target.token,
        leaseUntil: result.leaseUntil,
        at: result.serviceTime,
      });
    // Refused: answered, and nothing changed at the service.
    else append({ op: 'renew-refused', id, at: result.serviceTime });
    return result;
  };
  journaled.release = async (target) => {
    const id = `${process.pid}-${++sent}`;
    append({
      op: 'release-sent',
      id,
      key: target.key,
      holder: target.holder,
      token: target.token,
      at: Date.now(),
    });
    const result = await locks.release(target);
    if (result.ok)
      append({
        op: 'release',
        id,
        key: target.key,
        holder: target.holder,
        token: target.token,
        at: result.serviceTime,
      });
    else append({ op: 'release-refused', id, at: result.serviceTime });
    return result;
  };
  return journaled;
}

/** What the journals of a run hold: every entry, and the lines that could not be read. */
export interface JournalReading {
  entries: JournalEntry[];
  /** `file:line` of each line that is not a whole JSON entry (a kill can cut the last line short). */
  unreadable: string[];
}

/** Every entry of the journals in `files`, and where each unreadable line is. */
export function readJournals(files: string[]): JournalReading {
  const reading: JournalReading = { entries: [], unreadable: [] };
  for (const file of files) {
    if (!fs.existsSync(file)) continue;
    fs.readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.trim() === '') return;
        try {
          reading.entries.push(JSON.parse(line) as JournalEntry);
        } catch {
          reading.unreadable.push(`${path.basename(file)}:${i + 1}`);
        }
      });
  }
  return reading;
}
