import { setTimeout as delay } from 'node:timers/promises';
import type { LockService } from '../locks/lockService';
import { InvalidLockRequestError } from '../policy/errors';
import { overtakings } from '../policy/lockContract/fairness';
import type { AcquireAttempt, Denial, Lease, TryAcquireRequest } from '../policy/lockContract/lockSchemas';
import { SESSION_QUEUE_TICKET_MS } from '../policy/lockContract/lockSchemas';
import { openLockService } from '../locks/openLockService';
import { backendHarnesses, ownServer } from './support/lockBackends';
import { runStress } from './support/lockStress';
import { freshSqlitePath, unique } from '../devkit/tempFiles';

function granted(attempt: AcquireAttempt): Lease {
  if (!attempt.granted) throw new Error(`expected a grant, got ${attempt.denial.code}`);
  return attempt.lease;
}

function denied(attempt: AcquireAttempt): Denial {
  if (attempt.granted) throw new Error(`expected a denial, got token ${attempt.lease.token}`);
  return attempt.denial;
}

// etcd expires leases on its own lessor tick, up to about a second after the TTL.
const expiryMargin = (locks: LockService) => (locks.backend === 'etcd' ? 1_500 : 300);

describe.each(backendHarnesses({ secure: true }))('lock service contract on $name', (harness) => {
  let locks: LockService;
  let key: string;

  beforeAll(async () => {
    locks = await harness.open();
  });
  afterAll(() => locks?.close());
  beforeEach(() => {
    key = unique(`${harness.name}-key`);
  });

  const acquire = (requester: string, extra: Partial<TryAcquireRequest> = {}) =>
    locks.tryAcquire({ key, requester, ttlMs: 30_000, ...extra });

  it(`[${harness.name}] grants a free key, then denies others while the lease is live, naming holder and deadline`, async () => {
    const lease = granted(await acquire('a'));
    expect(lease).toMatchObject({ key, holder: 'a' });
    const denial = denied(await acquire('b'));
    expect(denial).toMatchObject({
      code: 'HELD',
      holder: 'a',
      reason: 'lock held by another client',
      position: 1,
      waiters: 0,
    });
    expect(denial.holderLeaseUntil).toBeGreaterThan(denial.serviceTime);
    expect((await locks.inspect(key)).waiters).toEqual(['b']);
  });

  it(`[${harness.name}] answers a holder that asks again with its existing lease, not a new token`, async () => {
    const first = granted(await acquire('a'));
    expect(granted(await acquire('a')).token).toBe(first.token);
  });

  it(`[${harness.name}] expires a lease on the service clock and grants the next requester a newer token`, async () => {
    const ttlMs = Math.max(locks.minTtlMs, 200);
    const first = granted(await acquire('a', { ttlMs }));
    expect(denied(await acquire('b', { ttlMs })).code).toBe('HELD');
    await delay(ttlMs + expiryMargin(locks));
    expect((await locks.inspect(key)).holder).toBeNull();
    const second = granted(await acquire('b', { ttlMs }));
    expect(BigInt(second.token)).toBeGreaterThan(BigInt(first.token));
  });

  it(`[${harness.name}] judges expiry on its own clock, whatever the caller's clock says, and reports times from it (etcd: the caller's estimates)`, async () => {
    const ttlMs = Math.max(locks.minTtlMs, 200);
    const realNow = Date.now.bind(Date);
    const clock = jest.spyOn(Date, 'now');
    try {
      clock.mockImplementation(() => realNow() + 3_600_000); // caller an hour ahead
      const lease = granted(await acquire('a', { ttlMs: 30_000 }));
      expect(denied(await acquire('b')).code).toBe('HELD');
      // etcd has no clock API: its times are the caller's reading (docs/lock-services.md).
      const reportedBy = Math.abs(lease.grantedAt - realNow()) < 60_000 ? 'service' : 'caller';
      expect(reportedBy).toBe(locks.backend === 'etcd' ? 'caller' : 'service');
      const other = unique('clock');
      clock.mockImplementation(() => realNow() - 3_600_000); // caller an hour behind
      granted(await locks.tryAcquire({ key: other, requester: 'c', ttlMs }));
      await delay(ttlMs + expiryMargin(locks));
      granted(await locks.tryAcquire({ key: other, requester: 'd', ttlMs }));
    } finally {
      clock.mockRestore();
    }
  });

  it(`[${harness.name}] renews only a live lease whose (holder, token) is current`, async () => {
    const lease = granted(await acquire('a'));
    expect(await locks.renew({ ...lease, token: String(BigInt(lease.token) + 1000n) })).toMatchObject({
      ok: false,
      reason: 'stale-token',
    });
    expect(await locks.renew({ ...lease, holder: 'b' })).toMatchObject({ ok: false, reason: 'not-holder' });
    const renewed = await locks.renew(lease);
    if (!renewed.ok) throw new Error(`the current lease's renewal was refused: ${renewed.reason}`);
    expect(renewed.leaseUntil).toBeGreaterThan(renewed.serviceTime);
    expect((await locks.inspect(key)).token).toBe(lease.token);
  });

  it(`[${harness.name}] lets only the owner with the current token release, and a refused release changes nothing`, async () => {
    const lease = granted(await acquire('a'));
    expect(await locks.release({ ...lease, holder: 'b' })).toMatchObject({ ok: false, reason: 'not-holder' });
    expect(await locks.release({ ...lease, token: String(BigInt(lease.token) + 1000n) })).toMatchObject({
      ok: false,
      reason: 'stale-token',
    });
    expect((await locks.inspect(key)).holder).toBe('a');
    expect(await locks.release(lease)).toMatchObject({ ok: true });
    expect((await locks.inspect(key)).holder).toBeNull();
    expect(await locks.release(lease)).toMatchObject({ ok: false });
  });

  it(`[${harness.name}] keeps FIFO order across interleaved arrivals: no latecomer jumps the queue`, async () => {
    const a = granted(await acquire('a'));
    expect(denied(await acquire('b')).position).toBe(1);
    expect(denied(await acquire('c')).position).toBe(2);
    expect(denied(await acquire('d')).position).toBe(3);
    expect(await locks.release(a)).toMatchObject({ ok: true });
    // The lock is free now, but only the head of the queue may take it.
    expect(denied(await acquire('c'))).toMatchObject({ code: 'QUEUED', position: 2 });
    expect(denied(await acquire('late'))).toMatchObject({ code: 'QUEUED', position: 4 });
    expect(denied(await acquire('d'))).toMatchObject({ code: 'QUEUED', position: 3 });
    const b = granted(await acquire('b'));
    expect(denied(await acquire('d')).code).toBe('HELD');
    await locks.release(b);
    expect(denied(await acquire('d')).code).toBe('QUEUED');
    const c = granted(await acquire('c'));
    expect(BigInt(c.token)).toBeGreaterThan(BigInt(b.token));
    expect((await locks.inspect(key)).waiters).toEqual(['d', 'late']);
  });

  it(`[${harness.name}] reports waiters who queue at the same moment in their order: no one overtakes`, async () => {
    granted(await acquire('holder'));
    // Sixteen arrivals at once: the order the service gives them is their order of arrival, so the
    // time each took its place never says a later one was put ahead (the fairness monitor reads it).
    await Promise.all(Array.from({ length: 16 }, (_, i) => acquire(`w${i}`)));
    const record = await locks.inspect(key);
    expect(record.queue).toHaveLength(16);
    expect(overtakings(key, record.queue)).toEqual([]);
  });

  it(`[${harness.name}] shows the queue in order, with when each waiter took its place, on the service clock`, async () => {
    granted(await acquire('holder'));
    const first = denied(await acquire('early'));
    await delay(50);
    denied(await acquire('late', { fairness: 'priority-based', priority: 0 }));
    // Asking again keeps the place and when it was taken.
    denied(await acquire('early'));
    const record = await locks.inspect(key);
    expect(record.queue.map((w) => w.requester)).toEqual(['early', 'late']);
    const [early, late] = record.queue;
    expect(early!.since).not.toBeNull();
    expect(early!.since!).toBeGreaterThanOrEqual(first.serviceTime - 5);
    expect(late!.since!).toBeGreaterThan(early!.since!);
    expect(early!.since!).toBeLessThanOrEqual(record.serviceTime);
    // etcd's tickets live on etcd leases of their own, whose end it does not report; the others say when.
    if (locks.backend === 'etcd') expect(early!.expiresAt).toBeNull();
    else expect(early!.expiresAt).toBeGreaterThan(record.serviceTime);
    await locks.leave({ key, requester: 'early' });
    expect((await locks.inspect(key)).queue.map((w) => w.requester)).toEqual(['late']);
  });

  it(`[${harness.name}] orders waiters by priority under priority-based fairness`, async () => {
    const holder = granted(await acquire('holder'));
    await acquire('low', { fairness: 'priority-based', priority: 1 });
    expect(denied(await acquire('high', { fairness: 'priority-based', priority: 9 })).position).toBe(1);
    await locks.release(holder);
    expect(denied(await acquire('low', { fairness: 'priority-based', priority: 1 })).code).toBe('QUEUED');
    expect(granted(await acquire('high', { fairness: 'priority-based', priority: 9 })).holder).toBe('high');
  });

  it(`[${harness.name}] lets a requester that waives fairness take a free lock without a ticket`, async () => {
    const holder = granted(await acquire('holder'));
    await acquire('waiter');
    const barger = denied(await acquire('barger', { fairness: 'no-starvation-guarantee' }));
    expect(barger.position).toBeNull();
    await locks.release(holder);
    expect(granted(await acquire('barger', { fairness: 'no-starvation-guarantee' })).holder).toBe('barger');
    expect((await locks.inspect(key)).waiters).toEqual(['waiter']);
  });

  it(`[${harness.name}] expires a dead waiter's ticket so it cannot block the queue`, async () => {
    const queueTicketMs = Math.max(1_000, locks.minTtlMs);
    const holder = granted(await acquire('holder'));
    await acquire('dead', { queueTicketMs });
    expect(await locks.position({ key, requester: 'dead' })).toBe(1);
    await delay(queueTicketMs + expiryMargin(locks));
    expect(await locks.position({ key, requester: 'dead' })).toBeNull();
    await locks.release(holder);
    expect(granted(await acquire('alive')).holder).toBe('alive');
  });

  it(`[${harness.name}] forgets a waiter that leaves, and lists holdings and waits for the wait-for graph`, async () => {
    const holder = granted(await acquire('holder'));
    await acquire('w1');
    await acquire('w2');
    expect((await locks.holdings()).filter((h) => h.key === key)).toEqual([
      expect.objectContaining({ key, holder: 'holder', token: holder.token }),
    ]);
    expect((await locks.waits()).filter((w) => w.key === key)).toEqual([
      { key, requester: 'w1', position: 1, owner: null },
      { key, requester: 'w2', position: 2, owner: null },
    ]);
    await locks.leave({ key, requester: 'w1' });
    expect(await locks.position({ key, requester: 'w2' })).toBe(1);
  });

  it(`[${harness.name}] keeps the owner a ticket and a lease were asked for, and forgets it with them`, async () => {
    const holder = granted(await acquire('holder', { owner: 'job-1' }));
    await acquire('w1', { owner: 'job-2' });
    await acquire('w2');
    expect((await locks.holdings()).filter((h) => h.key === key)).toEqual([
      expect.objectContaining({ holder: 'holder', owner: 'job-1' }),
    ]);
    expect((await locks.waits()).filter((w) => w.key === key)).toEqual([
      { key, requester: 'w1', position: 1, owner: 'job-2' },
      { key, requester: 'w2', position: 2, owner: null },
    ]);
    // The next lease, asked for without an owner, names none: nothing of job-1's lease is left.
    await locks.release(holder);
    await locks.leave({ key, requester: 'w1' });
    granted(await acquire('w2'));
    expect((await locks.holdings()).filter((h) => h.key === key)).toEqual([
      expect.objectContaining({ holder: 'w2', owner: null }),
    ]);
    // A ticket that left and is taken again without an owner names none either.
    await acquire('w1');
    expect((await locks.waits()).filter((w) => w.key === key)).toEqual([
      { key, requester: 'w1', position: 1, owner: null },
    ]);
    await expect(acquire('w3', { owner: ' padded ' })).rejects.toThrow(/owner/);
  });

  it(`[${harness.name}] lists a key no lease holds whose queue is live, head first, and never a held key`, async () => {
    const mine = async () => (await locks.stalledQueues()).filter((q) => q.key === key);
    const priority = { fairness: 'priority-based' as const };
    const holder = granted(await acquire('holder', priority));
    await acquire('low', { ...priority, priority: 0 });
    await acquire('high', { ...priority, priority: 5 });
    expect(await mine()).toEqual([]);
    // Released with its queue kept: nobody holds the key, and the head is the one to wake.
    expect(await locks.release(holder)).toMatchObject({ ok: true });
    expect(await mine()).toEqual([{ key, waiters: ['high', 'low'] }]);
    await locks.leave({ key, requester: 'high' });
    expect(await mine()).toEqual([{ key, waiters: ['low'] }]);
    expect(granted(await acquire('low', priority)).holder).toBe('low');
    expect(await mine()).toEqual([]);
    // A lease that runs out with a queue behind it stalls the queue too.
    const ttlMs = Math.max(locks.minTtlMs, 200);
    key = unique(`${harness.name}-expiring`);
    granted(await acquire('short-lived', { ttlMs }));
    await acquire('next');
    expect(await mine()).toEqual([]);
    await delay(ttlMs + expiryMargin(locks));
    expect(await mine()).toEqual([{ key, waiters: ['next'] }]);
  });

  it(`[${harness.name}] lists a lease that went a third of its TTL unrenewed, with its token, until it is renewed`, async () => {
    const low = async () => (await locks.leasesRunningLow(0.6)).filter((l) => l.key === key);
    const ttlMs = 3_000; // whole seconds, as etcd keeps them
    const lease = granted(await acquire('quiet', { ttlMs }));
    expect(await low()).toEqual([]);
    await delay(2_000);
    const [listed, ...more] = await low();
    expect(more).toEqual([]);
    expect(listed).toMatchObject({ key, holder: 'quiet', token: lease.token, ttlMs });
    expect(listed!.remainingMs).toBeGreaterThanOrEqual(0); // etcd: whole seconds, rounded down
    expect(listed!.remainingMs).toBeLessThan(ttlMs * 0.6);
    expect(await locks.renew(lease)).toMatchObject({ ok: true });
    expect(await low()).toEqual([]);
    // A released lease is nobody's to renew.
    await delay(2_000);
    expect(await low()).toHaveLength(1);
    expect(await locks.release(lease)).toMatchObject({ ok: true });
    expect(await low()).toEqual([]);
  });

  it.each([0, 1.5, Number.NaN])(
    `[${harness.name}] refuses %p as the fraction of a TTL left`,
    async (fraction) => {
      await expect(locks.leasesRunningLow(fraction)).rejects.toThrow(/^invalid leasesRunningLow fraction: /);
    },
  );

  it.each([
    ['an empty key', { key: '', requester: 'a', ttlMs: 1_000 }, /key: must not be empty/],
    ['an oversized key', { key: 'k'.repeat(257), requester: 'a', ttlMs: 1_000 }, /key: must be at most 256/],
    [
      'a key with control characters',
      { key: 'a\u0007b', requester: 'a', ttlMs: 1_000 },
      /key: character 2 is U\+0007, a control character/,
    ],
    ['a TTL of zero', { requester: 'a', ttlMs: 0 }, /ttlMs: must be greater than 0/],
    ['a negative TTL', { requester: 'a', ttlMs: -1 }, /ttlMs: must be greater than 0/],
    ['a TTL above the configured maximum', { requester: 'a', ttlMs: 60_001 }, /ttlMs: must be at most 60000/],
    ['a non-string holder', { requester: 42, ttlMs: 1_000 }, /requester: must be a string/],
    ['an unknown fairness policy', { requester: 'a', ttlMs: 1_000, fairness: 'LIFO' }, /fairness/],
  ])(
    `[${harness.name}] rejects %s with a typed error and leaves the stored state unchanged`,
    async (_, request, message) => {
      const attempt = locks.tryAcquire({ key, ...request } as TryAcquireRequest);
      await expect(attempt).rejects.toThrow(InvalidLockRequestError);
      await expect(locks.tryAcquire({ key, ...request } as TryAcquireRequest)).rejects.toThrow(message);
      expect(await locks.inspect(key)).toMatchObject({ holder: null, lastToken: null, waiters: [] });
    },
  );

  it(`[${harness.name}] survives 16 clients x 200 attempts on 4 keys: one holder at a time, tokens unique and rising, fenced writes in token order`, async () => {
    const report = await runStress(locks, { clients: 16, attemptsPerClient: 200, keys: 4 });
    console.log(`[${harness.name}] stress: ${report.summary}`);
    expect(report.overlaps).toEqual([]);
    expect(report.duplicateTokens).toEqual([]);
    expect(report.outOfOrderWrites).toEqual([]);
    expect(report.grants).toBeGreaterThan(100);
    expect(report.writesRefusedWhileHolding).toBe(0);
  }, 240_000);
});

// Restarts, on servers of this suite's own (a restart of the shared servers would fail whatever
// another jest worker is running on them). SQLite has no server: a service closed and opened again
// on its file is its restart, with nothing of the first instance's memory left.
describe('the lock service across a restart', () => {
  const key = () => unique('restart-key');
  const acquire = (locks: LockService, k: string, requester: string) =>
    locks.tryAcquire({ key: k, requester, ttlMs: 30_000 });

  // A lease taken and released, the key forgotten once idle past the retention, the service
  // restarted (by `restart`), then the key taken again: the new token is above the old one, and it
  // is the newest the service says it issued.
  async function expectTokensRiseAcross(url: string, restart: () => void): Promise<void> {
    const k = key();
    const idleKeyRetentionMs = url.startsWith('etcd') ? 2_000 : 200;
    let locks = await openLockService(url, { idleKeyRetentionMs });
    const before = granted(await acquire(locks, k, 'a'));
    await locks.release(before);
    await delay(idleKeyRetentionMs + (url.startsWith('etcd') ? 1_500 : 100));
    await locks.forgetIdleKeys();
    expect((await locks.inspect(k)).lastToken).toBeNull();
    await locks.close();
    restart();
    locks = await openLockService(url, { idleKeyRetentionMs });
    try {
      const after = granted(await acquire(locks, k, 'b'));
      expect(BigInt(after.token)).toBeGreaterThan(BigInt(before.token));
      expect((await locks.inspect(k)).lastToken).toBe(after.token);
    } finally {
      await locks.close();
    }
  }

  // A holder and 1,000 parked waiters (the tickets sessions take: an hour long), the service
  // restarted under them: every ticket is still there in arrival order, the holder renews, and each
  // release hands the key to the next in line.
  async function expectQueueKeptAcross(url: string, restart: () => void): Promise<void> {
    const k = key();
    const waiters = Array.from({ length: 1_000 }, (_, i) => `w${i}`);
    const ticket = (requester: string) => ({
      key: k,
      requester,
      ttlMs: 30_000,
      queueTicketMs: SESSION_QUEUE_TICKET_MS,
    });
    let locks = await openLockService(url);
    let holder = granted(await locks.tryAcquire(ticket('holder')));
    for (const w of waiters) denied(await locks.tryAcquire(ticket(w)));
    await locks.close();
    restart();
    locks = await openLockService(url);
    try {
      expect((await locks.inspect(k)).waiters).toEqual(waiters);
      expect(await locks.renew(holder)).toMatchObject({ ok: true });
      for (const [i, next] of waiters.slice(0, 3).entries()) {
        expect(await locks.release(holder)).toMatchObject({ ok: true });
        // The free key is the head's: the one behind it, second in line, is refused.
        expect(denied(await locks.tryAcquire(ticket(waiters[i + 1]!)))).toMatchObject({ position: 2 });
        holder = granted(await locks.tryAcquire(ticket(next)));
      }
      expect(await locks.position({ key: k, requester: 'w999' })).toBe(997);
      await locks.release(holder);
      for (const w of waiters) await locks.leave({ key: k, requester: w });
    } finally {
      await locks.close();
    }
  }

  it('[sqlite] keeps a queue of 1,000 tickets in order when the service is closed and opened again', () => {
    const url = `sqlite:${freshSqlitePath()}`;
    return expectQueueKeptAcross(url, () => undefined);
  }, 60_000);

  it('[sqlite] keeps tokens strictly increasing when the service is closed and opened again on its file', () =>
    expectTokensRiseAcross(`sqlite:${freshSqlitePath()}`, () => undefined));

  describe.each([
    ['redis', 16479, false],
    ['postgres', 15533, false],
    ['etcd', 12479, false], // and 12480 for its peers
    ['zookeeper', 12485, false],
    // Redis with ACLs replays scripts from its AOF under the default user's rules (redis/redis#14541).
    ['redis', 16483, true],
  ] as const)('on %s (over TLS with ACLs: %s)', (name, port, tls) => {
    const server = ownServer(name, tls ? 'conformance-restart-tls' : 'conformance-restart', port, { tls });
    const label = tls ? `${name}-tls` : name;
    beforeAll(() => server.start());
    afterAll(() => server.stop());

    it(`[${label}] keeps tokens strictly increasing across a restart of the server process`, () =>
      expectTokensRiseAcross(server.url, () => server.restart()));

    it(
      `[${label}] keeps a queue of 1,000 tickets in order across a restart of the server process`,
      () => expectQueueKeptAcross(server.url, () => server.restart()),
      120_000,
    );

    it(`[${label}] answers again after its server crashes under open connections, holding what it held`, async () => {
      const k = key();
      const locks = await openLockService(server.url);
      try {
        const held = granted(await acquire(locks, k, 'a')); // the client now keeps a connection open
        server.crash();
        // Calls may fail while the client connects anew; the process must not crash, and the lease stays.
        let failures = 0;
        let seen: AcquireAttempt | undefined;
        for (let tries = 0; tries < 100 && !seen; tries++)
          seen = await acquire(locks, k, 'b').catch(async () => {
            failures++;
            await delay(100);
            return undefined;
          });
        expect(denied(seen!)).toMatchObject({ holder: 'a' });
        expect(await locks.release(held)).toMatchObject({ ok: true });
        console.log(`[${label}] calls that failed while the client reconnected: ${failures}`);
      } finally {
        await locks.close();
      }
    });
  });
});
