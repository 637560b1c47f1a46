import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Etcd3 } from 'etcd3';
import { checkCampaign } from '../campaign/checker';
import type { JournalEntry } from '../campaign/journal';
import { followEtcdLeaseHistory, type LeaseKeyEvent } from '../locks/etcdLeaseHistory';
import { lockServiceUrlSchema, openLockService } from '../locks/openLockService';
import { freePort } from '../devkit/freePort';
import { SERVER_URLS } from './support/lockBackends';
import { waitFor } from './support/waitFor';

// etcd's own order of lease changes, read from a real etcd server's history: what the fault campaign
// judges etcd leases by, since the times etcd's backend reports are the worker's estimates.

const target = lockServiceUrlSchema.parse(SERVER_URLS.etcd);
const hosts = target.backend === 'etcd' ? target.hosts : [];

describe("etcd's lease history", () => {
  it('reads every grant, release and expiry of a key in revision order, with tokens equal to the create revisions', async () => {
    const locks = await openLockService(SERVER_URLS.etcd);
    const key = `history-${process.pid}-${Date.now()}`;
    const journal: JournalEntry[] = [];
    try {
      const follower = await followEtcdLeaseHistory({ hosts });
      const take = async (holder: string) => {
        const attempt = await locks.tryAcquire({ key, requester: holder, ttlMs: 2_000 });
        if (!attempt.granted) throw new Error(`${holder} was denied: ${attempt.denial.reason}`);
        journal.push({ op: 'grant', ...attempt.lease });
        return attempt.lease;
      };
      const a = await take('a');
      await locks.release({ key, holder: 'a', token: a.token });
      const b = await take('b');
      // b lets its lease run out: etcd itself deletes the key when its lease expires.
      for (let i = 0; i < 100 && (await locks.inspect(key)).holder !== null; i++) await delay(100);
      const c = await take('c');

      const history = (await follower.end()).filter((e) => e.key === key);
      expect(history.map((e) => [e.op, e.holder])).toEqual([
        ['create', 'a'],
        ['delete', null],
        ['create', 'b'],
        ['delete', null],
        ['create', 'c'],
      ]);
      expect(history.filter((e) => e.op === 'create').map((e) => e.revision)).toEqual([
        a.token,
        b.token,
        c.token,
      ]);

      const judged = (serviceOrder: LeaseKeyEvent[]) =>
        checkCampaign({
          writes: {},
          records: {},
          unreadableJournalLines: [],
          journal,
          faults: [],
          sessions: {},
          runsPerSessionId: {},
          serviceOrder,
          workerCrashes: [],
        }).violations;
      expect(Object.values(judged(history)).every((n) => n === 0)).toBe(true);
      // The same journal against a history that lacks b's expiry: b's lease would still be live.
      const flagged = judged(history.filter((e, i) => !(e.op === 'delete' && i === 3)));
      expect(flagged['overlapping-leases']).toBe(1);
    } finally {
      await locks.close();
    }
  });

  it('answers a watch etcd cancels, its start revision compacted away, with an error and no wait', async () => {
    // etcd runs with auto-compaction: a history read from an old revision is cancelled by the server,
    // and the campaign once waited on such a read forever. On an etcd of the test's own: compacting
    // the shared one would cut the paged reads other suites run at one revision.
    const own = await privateEtcd();
    const client = new Etcd3({ hosts: own.hosts });
    try {
      const written = await client.put('lockwarden/history-test').value('x').exec();
      await client.put('lockwarden/history-test').value('y').exec();
      await client.kv.compact({ revision: written.header.revision });
      const before = Number(written.header.revision) - 1;
      const read = followEtcdLeaseHistory(
        { hosts: own.hosts },
        { fromRevision: String(before), timeoutMs: 10_000 },
      ).then((follower) => follower.end());
      await expect(read).rejects.toThrow(`etcd cancelled the watch from revision ${before}`);
    } finally {
      client.close();
      await own.stop();
    }
  });
});

/** A single-member etcd on ports and a data directory of its own, stopped and removed by `stop`. */
async function privateEtcd(): Promise<{ hosts: string[]; stop(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-etcd-'));
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const peer = `http://127.0.0.1:${peerPort}`;
  const server = spawn(
    'etcd',
    [
      ...['--name', 'own', '--data-dir', dir],
      ...['--listen-client-urls', `http://127.0.0.1:${clientPort}`],
      ...['--advertise-client-urls', `http://127.0.0.1:${clientPort}`],
      ...['--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer],
      ...['--initial-cluster', `own=${peer}`],
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const stop = async () => {
    server.kill('SIGKILL');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const hosts = [`127.0.0.1:${clientPort}`];
  try {
    await waitFor("the test's own etcd answers", async () => {
      const probe = new Etcd3({ hosts });
      try {
        await probe.get('probe').string();
        return true;
      } catch {
        return false;
      } finally {
        probe.close();
      }
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { hosts, stop };
}
