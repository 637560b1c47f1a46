// Follows lease keys' changes in etcd's own history, in its order of revisions.
import { randomUUID } from 'node:crypto';
import { Etcd3, type IKeyValue, type Watcher } from 'etcd3';
import { LEASE_PREFIX, type LeaseValue } from './etcdLockService';
import { type EtcdTarget, etcdClientOptions } from './lockServiceTls';

/**
 * One change of a lease key, in etcd's own order: `create` writes a key that was absent (a grant:
 * its revision is the fencing token), `overwrite` writes a key that was present, `delete` ends the
 * lease (a release, or etcd expiring it on its own clock).
 */
export interface LeaseKeyEvent {
  key: string;
  op: 'create' | 'overwrite' | 'delete';
  /** The revision of the change, as a decimal string: etcd's total order of every write. */
  revision: string;
  /** The holder a create or overwrite wrote; null for a delete, or a value lockwarden did not write. */
  holder: string | null;
}

/** How many times a watch cancelled for an auth token etcd forgot is taken up again. */
const MAX_AUTH_RESUMES = 10;

/** A watch on every lease key from when it began; `end` answers every change it saw, in order. */
export interface LeaseHistoryFollower {
  /**
   * Every change since the follower began, once etcd has delivered all of them, or an error within
   * `timeoutMs`: a watch etcd cancelled, or no answer. Closes the follower either way.
   */
  end(options?: { timeoutMs?: number }): Promise<LeaseKeyEvent[]>;
}

/**
 * Starts following every change of every lease key the etcd backend makes from now on (or from
 * `fromRevision`), for a checker that judges leases by the service's order instead of by times that,
 * on etcd, are only the worker's estimates.
 *
 * The watch is opened at the start and kept, not opened at the end from an old revision: etcd runs
 * with auto-compaction (scripts/lock-servers.sh, cluster.sh), and a watch from a compacted revision
 * is cancelled, while a watch already open sees every change however long the run. etcd3 reopens a
 * watch that a fault broke from the last revision it delivered, and a watch an etcd with users
 * cancels for a forgotten auth token (after it restarts) is taken up again here, from the next
 * revision, on a client that signs in afresh. `end` writes a sentinel key: etcd
 * delivers events in revision order, so once the sentinel arrives every earlier change has too.
 * Every wait is bounded by `timeoutMs`: a cancelled watch is an error, never a hang.
 */
export async function followEtcdLeaseHistory(
  target: Pick<EtcdTarget, 'hosts'> & Partial<EtcdTarget>,
  { fromRevision, timeoutMs = 60_000 }: { fromRevision?: string; timeoutMs?: number } = {},
): Promise<LeaseHistoryFollower> {
  let client = new Etcd3(etcdClientOptions(target));
  const events: LeaseKeyEvent[] = [];
  const sentinel = `lockwarden/history-end/${randomUUID()}`;
  let failure: Error | null = null;
  let sentinelSeen = (): void => {};
  let failed = (_: Error): void => {};
  let resumes = 0;

  const watchFrom = (start: string): Watcher => {
    const next = client.watch().prefix('lockwarden/').startRevision(start).watcher();
    // Listeners before the watch is created: etcd may cancel it in the same breath as creating it.
    next.on('error', (error: Error) => {
      // An etcd with users cancels a watch whose auth token it no longer knows (every token, once it
      // restarts): the watch goes on from the next revision it has not delivered, on a client that
      // signs in afresh. Any other cancellation (a compacted revision) is an error.
      if (/auth token/i.test(error.message) && resumes < MAX_AUTH_RESUMES) {
        resumes++;
        const stale = client;
        client = new Etcd3(etcdClientOptions(target));
        setImmediate(() => stale.close());
        watcher = watchFrom(String(next.lastRevision() ?? start));
        return;
      }
      failure = new Error(
        `etcd lease history: etcd cancelled the watch from revision ${start} (as it does a compacted one): ${error.message}`,
      );
      failed(failure);
    });
    next.on('put', (kv) => {
      if (kv.key.toString() === sentinel) sentinelSeen();
      else if (isLeaseKey(kv))
        events.push(eventOf(kv, kv.create_revision === kv.mod_revision ? 'create' : 'overwrite'));
    });
    next.on('delete', (kv) => {
      if (isLeaseKey(kv)) events.push(eventOf(kv, 'delete'));
    });
    return next;
  };

  let watcher: Watcher;
  try {
    watcher = watchFrom(fromRevision ?? String(BigInt(await currentRevision(client)) + 1n));
    const first = watcher;
    await within(timeoutMs, 'no watch created', (resolve, reject) => {
      if (failure) reject(failure);
      first.once('connected', () => resolve());
      failed = reject;
    });
  } catch (error) {
    client.close();
    throw error;
  }

  return {
    async end({ timeoutMs: endTimeoutMs = timeoutMs } = {}) {
      try {
        await within(endTimeoutMs, 'no end of history', (resolve, reject) => {
          if (failure) return reject(failure);
          sentinelSeen = resolve;
          failed = reject;
          client.put(sentinel).value('').exec().catch(reject);
        });
        return events;
      } finally {
        // A watch etcd cancelled is gone already: cancelling it again would wait for an end that
        // never comes. Closing the client ends the rest.
        if (!failure)
          await within(endTimeoutMs, 'the watch did not close', (resolve) => {
            watcher.cancel().then(resolve, resolve);
          }).catch(() => {});
        // The sentinel goes whatever happened: a read that failed leaves no key behind.
        await client
          .delete()
          .key(sentinel)
          .exec()
          .catch(() => undefined);
        client.close();
      }
    },
  };
}

/** etcd's current revision: a follower from the next sees only what happens after. */
async function currentRevision(client: Etcd3): Promise<string> {
  return (await client.kv.range({ key: Buffer.from(LEASE_PREFIX) })).header.revision;
}

/** A promise settled by `body`, or rejected naming `what` after `timeoutMs`. */
function within(
  timeoutMs: number,
  what: string,
  body: (resolve: () => void, reject: (error: Error) => void) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`etcd lease history: ${what} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const settle =
      <A extends unknown[]>(f: (...a: A) => void) =>
      (...a: A) => {
        clearTimeout(timer);
        f(...a);
      };
    body(settle(resolve), settle(reject));
  });
}

const isLeaseKey = (kv: IKeyValue) => kv.key.toString().startsWith(LEASE_PREFIX);

function eventOf(kv: IKeyValue, op: LeaseKeyEvent['op']): LeaseKeyEvent {
  return {
    key: decodeURIComponent(kv.key.toString().slice(LEASE_PREFIX.length)),
    op,
    revision: kv.mod_revision,
    holder: op === 'delete' ? null : holderIn(kv.value.toString()),
  };
}

/**
 * The holder a lease value names; null for a value lockwarden did not write (another writer's
 * record, which the backend refuses as CorruptLockState): one bad key must not end the whole read.
 */
function holderIn(value: string): string | null {
  try {
    const holder = (JSON.parse(value) as Partial<LeaseValue> | null)?.holder;
    return typeof holder === 'string' ? holder : null;
  } catch {
    return null;
  }
}
