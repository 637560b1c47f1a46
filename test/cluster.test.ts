// lockwarden on a cluster (scripts/cluster.sh): Temporal's server as separate services on PostgreSQL,
// a three-member etcd, two lock-worker hosts and a model-worker host. What a cluster meets (a leader
// dying, a host cut off, a history service restarting) must cost no lease, token or wake-up.
import { execFileSync } from 'node:child_process';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { acquire, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import {
  awaitEtcdLeader,
  CLUSTER,
  clusterUp,
  cutHost,
  healHost,
  hostRunning,
  killProcess,
  lockWorkerLogEvents,
  namespaceOf,
  startProcess,
} from '../devkit/cluster';
import { unique } from '../devkit/tempFiles';
import { acquisitionWorkflowId } from '../policy/constants';
import { waitFor } from './support/waitFor';

jest.setTimeout(240_000);

/** Whether a TCP connection from inside a host's namespace to `address` opens within two seconds. */
function reaches(host: 'model' | 'lock-1', ip: string, port: number): boolean {
  try {
    execFileSync(
      'ip',
      ['netns', 'exec', namespaceOf(host), 'timeout', '2', 'bash', '-c', `</dev/tcp/${ip}/${port}`],
      {
        stdio: 'ignore',
      },
    );
    return true;
  } catch {
    return false;
  }
}

/** How many `lockReleased` signals (a release's wake-up, or the queue sweep's) a session received. */
async function wakeUpsOf(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (event) => event.workflowExecutionSignaledEventAttributes?.signalName === 'lockReleased',
  ).length;
}

describe('lockwarden on a cluster', () => {
  let client: Client;
  let locks: LockService;
  const placement = { taskQueue: CLUSTER.taskQueue };

  beforeAll(async () => {
    clusterUp();
    client = new Client({ connection: await connectTemporal({ address: CLUSTER.temporalAddress }) });
    locks = await openLockService(CLUSTER.lockServiceUrl);
  }, 600_000);
  afterAll(async () => {
    await locks?.close();
    await client?.connection.close();
  });

  it("puts the model worker's host where it reaches Temporal's frontend and no lock service", () => {
    const [frontendIp, frontendPort] = CLUSTER.temporalAddress.split(':') as [string, string];
    const etcd = Object.values(CLUSTER.etcdMembers);
    expect(reaches('model', frontendIp, Number(frontendPort))).toBe(true);
    expect(etcd.map((ip) => reaches('model', ip, 2379))).toEqual([false, false, false]);
    // The same etcd members answer a lock worker's host: the model's refusal is its fence, not a fault.
    expect(etcd.map((ip) => reaches('lock-1', ip, 2379))).toEqual([true, true, true]);
  });

  it("keeps a holding session's lease and token across the etcd leader's death, and tokens rise after", async () => {
    const key = unique('cluster-leader');
    // A TTL longer than etcd's failover (an election, then the client's redial to another member):
    // with 3 s, a run under load lost the lease, safely, before a renewal reached the new leader.
    const ttlMs = 10_000;
    const held = await acquire(client, { key, requester: 'holder', ttlMs }, placement);
    const leader = await awaitEtcdLeader();
    killProcess(leader);
    try {
      const next = await awaitEtcdLeader(leader);
      expect(next).not.toBe(leader);
      // Two TTLs after the new leader took over, the lease is still there: etcd drops a lease
      // nobody renews, so the keeper renewed it on the new leader.
      await new Promise((r) => setTimeout(r, 2 * ttlMs));
      expect(await locks.inspect(key)).toMatchObject({ holder: 'holder', token: held.lease.token });
      expect((await stateOf(client, held.session.workflowId)).phase).toBe('holding');
      await release(client, held.lease);
    } finally {
      startProcess(leader);
    }
    // A grant after the leader change is fenced above every grant before it.
    const after = await acquire(client, { key, requester: 'after', ttlMs }, placement);
    expect(BigInt(after.lease.token)).toBeGreaterThan(BigInt(held.lease.token));
    await release(client, after.lease);
  });

  it('goes on on the other lock worker when a host is cut off, and never holds a lease twice', async () => {
    const key = unique('cluster-cut');
    // The default TTL: a lease outlives the time Temporal takes to see a worker gone (a workflow task
    // started on the cut host times out after 10 s) plus a renewal (README, sizing a cluster).
    const first = await acquire(client, { key, requester: 'first', ttlMs: 30_000 }, placement);
    const second = await startAcquisition(client, { key, requester: 'second', ttlMs: 30_000 }, placement);
    const holders = new Set<string>();
    let twice = 0;
    let watching = true;
    // Both sessions' own word, sampled all along: never both holding at once.
    const watch = (async () => {
      while (watching) {
        const phases = await Promise.all(
          [first.session.workflowId, second.workflowId].map(async (id) => (await stateOf(client, id)).phase),
        ).catch(() => null);
        if (phases?.every((p) => p === 'holding')) twice++;
        const record = await locks.inspect(key).catch(() => null);
        if (record?.holder) holders.add(record.holder);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      // The host whose worker runs the holder's session (its workflow tasks and, most likely, its
      // keeper), cut off for longer than a workflow task's timeout, then healed.
      const host = await hostRunning(client, first.session.workflowId);
      cutHost(host);
      await new Promise((r) => setTimeout(r, 15_000));
      healHost(host);
      await new Promise((r) => setTimeout(r, 2_000));
      const other = await hostRunning(client, first.session.workflowId);
      expect(other).not.toBe(host);
      expect((await stateOf(client, first.session.workflowId)).phase).toBe('holding');
      expect(await locks.inspect(key)).toMatchObject({ holder: 'first', token: first.lease.token });
      await release(client, first.lease);
      await waitFor(
        'the waiter granted',
        async () => (await stateOf(client, second.workflowId)).phase === 'holding',
        60_000,
      );
      const granted = await locks.inspect(key);
      expect(granted.holder).toBe('second');
      expect(BigInt(granted.token!)).toBeGreaterThan(BigInt(first.lease.token));
    } finally {
      for (const host of CLUSTER.lockHosts) healHost(host);
      await new Promise((r) => setTimeout(r, 500)); // one more sample, of the second's hold
      watching = false;
      await watch;
      // Neither session outlives the test, passed or not: a hold left running would keep its lease.
      for (const id of [first.session.workflowId, second.workflowId])
        await client.workflow
          .getHandle(id)
          .terminate('test over')
          .catch(() => undefined);
    }
    expect(twice).toBe(0);
    expect([...holders].sort()).toEqual(['first', 'second']);
  });

  it('loses no session and no wake-up when a history service is killed and restarted', async () => {
    // Eight keys, so that some holder's release and its next waiter's wake-up land on different
    // history hosts whatever the shards' placement: those wake-ups are sent while a shard is moving.
    const keys = Array.from({ length: 8 }, () => unique('cluster-history'));
    const waiters = ['w1', 'w2'];
    // Leases of the default 30 s: a shorter one can run out while the holder's shard moves, before its
    // keeper's next activity is dispatched (docs/cluster.md, "Sizing a real cluster").
    const hold = (key: string, requester: string) =>
      acquire(client, { key, requester, ttlMs: 30_000 }, placement);
    const holders = await Promise.all(keys.map((key) => hold(key, 'holder')));
    const waiting = keys.map((key) =>
      Promise.all(
        waiters.map((requester) =>
          hold(key, requester).then(async (held) => {
            await new Promise((r) => setTimeout(r, 300));
            await release(client, held.lease);
            return held.lease.token;
          }),
        ),
      ),
    );
    await waitFor(
      'every waiter queued',
      async () =>
        (await Promise.all(keys.map((key) => locks.inspect(key)))).every(
          (record) => record.waiters.length === waiters.length,
        ),
      60_000,
    );
    killProcess('history-1');
    try {
      // Released while a history host is down: the shards it owned move to the other one, and the
      // wake-up of each next waiter must still happen.
      const released = await Promise.all(holders.map((holder) => release(client, holder.lease)));
      expect(released.map((answer) => answer.ok)).toEqual(keys.map(() => true));
    } finally {
      startProcess('history-1');
    }
    for (const [k, key] of keys.entries()) {
      const order = [holders[k]!.lease.token, ...(await waiting[k]!)].map((t) => BigInt(t));
      // Every waiter got the lease once, each grant fenced above the holder's.
      expect(new Set(order).size).toBe(order.length);
      expect(order.slice(1).every((token) => token > order[0]!)).toBe(true);
      expect((await locks.inspect(key)).holder).toBeNull();
      // Each waiter was woken, not left parked until its timer.
      const wakeUps = await Promise.all(
        waiters.map((requester) => wakeUpsOf(client, acquisitionWorkflowId(key, requester))),
      );
      expect({ key, woken: wakeUps.map((n) => n > 0) }).toEqual({ key, woken: [true, true] });
    }
    // No release's wake-up was dropped: Temporal refused none while the shards moved (one that is slow
    // may be overtaken by the queue sweep's, which is what the sweep is for; one dropped would be lost
    // but for it). A wake-up that finds its session already ended is not dropped.
    const dropped = lockWorkerLogEvents('lock.wake-missed').filter(
      (event) => keys.includes(event.key as string) && event.gone === false,
    );
    expect(dropped).toEqual([]);
  });
});
