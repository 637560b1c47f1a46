// The etcd backend reads every lease and every ticket a page at a time: one answer over the etcd
// client's 4 MiB limit fails (and opens the client's circuit breaker) from about 29,000 keys. With
// pages of two keys, every whole-prefix read here spans several pages, on a real etcd server.
import { EtcdLockService } from '../locks/etcdLockService';
import { lockServiceUrlSchema } from '../locks/openLockService';
import { SERVER_URLS } from './support/lockBackends';

const target = lockServiceUrlSchema.parse(SERVER_URLS.etcd);
const hosts = target.backend === 'etcd' ? target.hosts : [];

describe('etcd reads of every lease and ticket, a page at a time', () => {
  const locks = new EtcdLockService({ hosts, rangePage: 2 });
  const run = `paged-${process.pid}-${Date.now()}`;
  const keys = ['a', 'b', 'c', 'd', 'e'].map((k) => `${run}-${k}`);
  const waiters = ['w1', 'w2', 'w3'];
  const ours = <T extends { key: string }>(list: T[]) => list.filter((item) => item.key.startsWith(run));

  beforeAll(async () => {
    for (const key of keys) {
      const held = await locks.tryAcquire({ key, requester: 'holder', ttlMs: 30_000 });
      if (!held.granted) throw new Error(`${key} was not granted`);
      for (const requester of waiters)
        await locks.tryAcquire({ key, requester, ttlMs: 30_000, queueTicketMs: 60_000 });
    }
    // The last key's holder lets go: its queue waits with nobody holding it.
    const last = await locks.inspect(keys[4]!);
    await locks.release({ key: keys[4]!, holder: 'holder', token: last.token! });
  });
  afterAll(async () => {
    for (const key of keys) {
      for (const requester of waiters) await locks.leave({ key, requester });
      const record = await locks.inspect(key);
      if (record.holder) await locks.release({ key, holder: record.holder, token: record.token! });
    }
    await locks.close();
  });

  it('finds every lease and every ticket, in queue order', async () => {
    const held = ours(await locks.holdings());
    expect(held.map((h) => h.key).sort()).toEqual(keys.slice(0, 4));
    const waits = ours(await locks.waits());
    expect(waits).toHaveLength(keys.length * waiters.length);
    for (const key of keys)
      expect(waits.filter((w) => w.key === key).map((w) => [w.requester, w.position])).toEqual([
        ['w1', 1],
        ['w2', 2],
        ['w3', 3],
      ]);
    expect(await locks.position({ key: keys[0]!, requester: 'w3' })).toBe(3);
  });

  it("finds the queue nobody holds, whole, and every lease's time left", async () => {
    expect(ours(await locks.stalledQueues())).toEqual([{ key: keys[4], waiters }]);
    const low = ours(await locks.leasesRunningLow(1));
    expect(low.map((l) => l.key).sort()).toEqual(keys.slice(0, 4));
  });
});
