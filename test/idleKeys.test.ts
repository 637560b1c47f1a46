// Storage follows the keys in use: every backend forgets a key idle past its retention, keeps one
// whose queue is live, and still issues it a higher token afterwards.
import { setTimeout as delay } from 'node:timers/promises';
import { Etcd3 } from 'etcd3';
import type { LockService } from '../locks/lockService';
import { lockServiceUrlSchema, openLockService } from '../locks/openLockService';
import type { AcquireAttempt, Lease } from '../policy/lockContract/lockSchemas';
import { backendHarnesses, SERVER_URLS } from './support/lockBackends';
import { recordsNaming } from './support/storedRecords';
import { unique } from '../devkit/tempFiles';

function granted(attempt: AcquireAttempt): Lease {
  if (!attempt.granted) throw new Error(`expected a grant, got ${attempt.denial.code}`);
  return attempt.lease;
}

describe.each(backendHarnesses())('idle keys on $name', (harness) => {
  // etcd's shortest lease is 2 s and its lessor looks every 500 ms; the others keep to the ms.
  const retentionMs = harness.backend === 'etcd' ? 2_000 : 300;
  const ttlMs = harness.backend === 'etcd' ? 2_000 : 200;
  const settleMs = harness.backend === 'etcd' ? 1_500 : 200;
  let locks: LockService;
  let key: string;

  beforeAll(async () => {
    locks = await openLockService(harness.url, { idleKeyRetentionMs: retentionMs });
  });
  afterAll(() => locks?.close());
  beforeEach(() => {
    key = unique(`${harness.name}-idle`);
  });

  // What a sweep would do once the retention has passed.
  async function afterRetention(extraMs = 0): Promise<void> {
    await delay(retentionMs + settleMs + extraMs);
    await locks.forgetIdleKeys();
  }

  it(`[${harness.name}] keeps a released key's newest token for the retention, then forgets the key, and its next token is higher`, async () => {
    const first = granted(await locks.tryAcquire({ key, requester: 'a', ttlMs: 30_000 }));
    // A waiter that gave up on it: its lapsed ticket goes too.
    await locks.tryAcquire({ key, requester: 'b', ttlMs: 30_000, queueTicketMs: 1_000 });
    expect(await locks.release(first)).toMatchObject({ ok: true });
    await locks.forgetIdleKeys();
    expect((await locks.inspect(key)).lastToken).toBe(first.token);
    await afterRetention(1_000);
    expect(await recordsNaming(harness.url, key)).toBe(0);
    expect((await locks.inspect(key)).lastToken).toBeNull();
    const next = granted(await locks.tryAcquire({ key, requester: 'c', ttlMs: 30_000 }));
    expect(BigInt(next.token)).toBeGreaterThan(BigInt(first.token));
    await locks.release(next);
  }, 30_000);

  it(`[${harness.name}] forgets a lease that ran out unreleased (its holder died), and lists it nowhere`, async () => {
    const lapsed = granted(await locks.tryAcquire({ key, requester: 'dead', ttlMs }));
    await afterRetention(ttlMs);
    expect(await recordsNaming(harness.url, key)).toBe(0);
    expect((await locks.holdings()).map((h) => h.key)).not.toContain(key);
    const next = granted(await locks.tryAcquire({ key, requester: 'alive', ttlMs: 30_000 }));
    expect(BigInt(next.token)).toBeGreaterThan(BigInt(lapsed.token));
    await locks.release(next);
  }, 30_000);

  it(`[${harness.name}] keeps a free key whose queue has a live ticket past the retention, still listed as stalled`, async () => {
    const holder = granted(await locks.tryAcquire({ key, requester: 'a', ttlMs: 30_000 }));
    await locks.tryAcquire({ key, requester: 'b', ttlMs: 30_000, queueTicketMs: 60_000 });
    await locks.release(holder);
    await afterRetention();
    expect(await recordsNaming(harness.url, key)).toBeGreaterThan(0);
    expect(await locks.stalledQueues()).toContainEqual({ key, waiters: ['b'] });
    const head = granted(await locks.tryAcquire({ key, requester: 'b', ttlMs: 30_000 }));
    expect(BigInt(head.token)).toBeGreaterThan(BigInt(holder.token));
    await locks.release(head);
  }, 30_000);
});

// While 0.1.0's workers run beside 0.2.0's they count tokens per key, from 1 for a key with no
// record: a retention of 0 keeps every key, so none of them ever meets a forgotten key.
describe.each(backendHarnesses())('keeping every key (retention 0) on $name', (harness) => {
  let locks: LockService;
  beforeAll(async () => {
    locks = await openLockService(harness.url, { idleKeyRetentionMs: 0 });
  });
  afterAll(() => locks?.close());

  it(`[${harness.name}] forgets no released key, however long it is idle, and keeps its newest token`, async () => {
    const key = unique(`${harness.name}-kept`);
    const held = granted(await locks.tryAcquire({ key, requester: 'a', ttlMs: 30_000 }));
    await locks.release(held);
    // Past the shortest retention any backend has (etcd's lessor looks every 500 ms).
    await delay(harness.backend === 'etcd' ? 3_500 : 500);
    await locks.forgetIdleKeys();
    expect((await locks.inspect(key)).lastToken).toBe(held.token);
    expect(await recordsNaming(harness.url, key)).toBeGreaterThan(0);
  }, 30_000);
});

// etcd: a ticket is a key on an etcd lease of its own, which the waiter's grant leaves empty.
describe('ticket leases on etcd', () => {
  it("[etcd] revokes a waiter's ticket lease when it is granted or leaves: no lease is left behind for the ticket's hour", async () => {
    const target = lockServiceUrlSchema.parse(SERVER_URLS.etcd);
    const client = new Etcd3({ hosts: target.backend === 'etcd' ? target.hosts : [] });
    const locks = await openLockService(SERVER_URLS.etcd);
    const key = unique('etcd-ticket-lease');
    const ttlOf = async (id: string) => Number((await client.leaseClient.leaseTimeToLive({ ID: id })).TTL);
    try {
      const first = granted(await locks.tryAcquire({ key, requester: 'a', ttlMs: 30_000 }));
      await locks.tryAcquire({ key, requester: 'b', ttlMs: 30_000, queueTicketMs: 3_600_000 });
      const ticket = await client.get(`lockwarden/wait/${encodeURIComponent(key)}/b`).exec();
      const ticketLease = ticket.kvs[0]!.lease;
      expect(await ttlOf(ticketLease)).toBeGreaterThan(3_000);
      await locks.release(first);
      const second = granted(
        await locks.tryAcquire({ key, requester: 'b', ttlMs: 30_000, queueTicketMs: 3_600_000 }),
      );
      expect(await ttlOf(ticketLease)).toBe(-1); // etcd's answer for a lease it no longer has
      // A waiter that leaves the queue takes its ticket's lease with it too.
      await locks.tryAcquire({ key, requester: 'c', ttlMs: 30_000, queueTicketMs: 3_600_000 });
      const leaving = (await client.get(`lockwarden/wait/${encodeURIComponent(key)}/c`).exec()).kvs[0]!.lease;
      await locks.leave({ key, requester: 'c' });
      expect(await ttlOf(leaving)).toBe(-1);
      await locks.release(second);
    } finally {
      client.close();
      await locks.close();
    }
  });
});
