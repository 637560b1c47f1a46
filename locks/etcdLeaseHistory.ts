// Reads a lease key's changes from etcd's own history, in its order of revisions.
import { randomUUID } from 'node:crypto';
import { Etcd3, type IKeyValue } from 'etcd3';
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

/**
 * Every change of every lease key the etcd backend ever made, in revision order, read from etcd's
 * history (a watch from `fromRevision`, 1 by default; the campaign's etcd never compacts). It lets a checker judge
 * leases by the service's order instead of by times that, on etcd, are only the worker's estimates.
 * A sentinel key written after the watch starts marks the end of history: etcd delivers events in
 * revision order, so once the sentinel arrives every earlier change has too.
 */
export async function readEtcdLeaseHistory(
  target: Pick<EtcdTarget, 'hosts'> & Partial<EtcdTarget>,
  { fromRevision = '1', timeoutMs = 60_000 }: { fromRevision?: string; timeoutMs?: number } = {},
): Promise<LeaseKeyEvent[]> {
  const client = new Etcd3(etcdClientOptions(target));
  const sentinel = `lockwarden/history-end/${randomUUID()}`;
  const events: LeaseKeyEvent[] = [];
  try {
    const watcher = await client.watch().prefix('lockwarden/').startRevision(fromRevision).create();
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`etcd lease history: no end of history within ${timeoutMs} ms`)),
          timeoutMs,
        );
        watcher.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
        watcher.on('put', (kv) => {
          if (kv.key.toString() === sentinel) {
            clearTimeout(timer);
            resolve();
          } else if (isLeaseKey(kv))
            events.push(eventOf(kv, kv.create_revision === kv.mod_revision ? 'create' : 'overwrite'));
        });
        watcher.on('delete', (kv) => {
          if (isLeaseKey(kv)) events.push(eventOf(kv, 'delete'));
        });
        client.put(sentinel).value('').exec().catch(reject);
      });
    } finally {
      await watcher.cancel();
    }
    await client.delete().key(sentinel).exec();
  } finally {
    client.close();
  }
  return events;
}

/** etcd's current revision: a later `readEtcdLeaseHistory` from it reads only what happens next. */
export async function currentEtcdRevision(hosts: string[]): Promise<string> {
  const client = new Etcd3(etcdClientOptions({ hosts }));
  try {
    const response = await client.kv.range({ key: Buffer.from(LEASE_PREFIX) });
    return response.header.revision;
  } finally {
    client.close();
  }
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
