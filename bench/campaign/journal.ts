import fs from 'node:fs';
import type { LockService } from '../../locks/lockService';

/** One lease event the lock service answered, as a campaign worker journals it (service clock). */
export type JournalEntry =
  | { op: 'grant'; key: string; holder: string; token: string; grantedAt: number; leaseUntil: number }
  | { op: 'renew'; key: string; holder: string; token: string; leaseUntil: number }
  | { op: 'release'; key: string; holder: string; token: string; at: number };

/**
 * A lock service that journals every grant, renewal and release it answers, one JSON line each,
 * appended before the answer returns: the checker rebuilds each key's leases on the service clock
 * from the journals of all workers. (A line is lost only if the process dies between the service's
 * commit and the append; the checker reports grants it saw written but not journaled.)
 */
export function journalingLocks(locks: LockService, file: string): LockService {
  const append = (entry: JournalEntry) => fs.appendFileSync(file, JSON.stringify(entry) + '\n');
  const journaled = Object.create(locks) as LockService;
  journaled.tryAcquire = async (request) => {
    const attempt = await locks.tryAcquire(request);
    if (attempt.granted) append({ op: 'grant', ...attempt.lease });
    return attempt;
  };
  journaled.renew = async (target) => {
    const result = await locks.renew(target);
    if (result.ok && result.leaseUntil !== undefined)
      append({
        op: 'renew',
        key: target.key,
        holder: target.holder,
        token: target.token,
        leaseUntil: result.leaseUntil,
      });
    return result;
  };
  journaled.release = async (target) => {
    const result = await locks.release(target);
    if (result.ok)
      append({
        op: 'release',
        key: target.key,
        holder: target.holder,
        token: target.token,
        at: result.serviceTime,
      });
    return result;
  };
  return journaled;
}

/** Every entry of the journals in `files`. */
export function readJournals(files: string[]): JournalEntry[] {
  return files.flatMap((file) =>
    (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as JournalEntry];
        } catch {
          return []; // a line cut short by a kill: the checker counts grants it cannot see
        }
      }),
  );
}
