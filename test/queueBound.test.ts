// The lock service's bounds, on every backend: a key's queue takes a bounded number of tickets
// (QUEUE_FULL beyond), and a requester name holds or waits for a bounded number of keys
// (REQUESTER_LIMIT beyond); neither refuses a waiter already queued or a holder asking again.
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import type { AcquireAttempt } from '../policy/lockContract/lockSchemas';
import { backendHarnesses } from './support/lockBackends';
import { unique } from '../devkit/tempFiles';

const MAX_WAITERS = 3;
const MAX_KEYS = 2;

function denialOf(attempt: AcquireAttempt) {
  if (attempt.granted) throw new Error(`expected a denial, got token ${attempt.lease.token}`);
  return attempt.denial;
}

describe.each(backendHarnesses())('the queue bound on $name', (harness) => {
  let locks: LockService;
  beforeAll(async () => {
    locks = await openLockService(harness.url, {
      maxWaitersPerKey: MAX_WAITERS,
      maxKeysPerRequester: MAX_KEYS,
    });
  });
  afterAll(() => locks?.close());

  it(`[${harness.name}] denies a waiter beyond maxWaitersPerKey with QUEUE_FULL and no ticket; the queued keep their places`, async () => {
    const key = unique(`${harness.name}-bounded`);
    // Names of this run's own: the servers keep other runs' tickets, which count per requester.
    const [holderName, w1, w2, w3, w4] = ['holder', 'w1', 'w2', 'w3', 'w4'].map((n) => unique(n));
    const ask = (requester: string) => locks.tryAcquire({ key, requester, ttlMs: 30_000 });
    const holder = await ask(holderName!);
    for (const w of [w1!, w2!, w3!]) expect(denialOf(await ask(w)).code).toBe('HELD');
    const refused = denialOf(await ask(w4!));
    expect(refused).toMatchObject({
      code: 'QUEUE_FULL',
      position: null,
      waiters: MAX_WAITERS,
      holder: holderName,
    });
    expect((await locks.inspect(key)).waiters).toEqual([w1, w2, w3]);
    // A waiter already queued asks again (its ticket's refresh): still its place, not refused.
    expect(denialOf(await ask(w3!))).toMatchObject({ code: 'HELD', position: 3 });
    await locks.leave({ key, requester: w1! });
    expect(denialOf(await ask(w4!))).toMatchObject({ code: 'HELD', position: 3 });
    if (holder.granted) await locks.release(holder.lease);
    for (const w of [w2!, w3!, w4!]) await locks.leave({ key, requester: w });
  });

  it(`[${harness.name}] denies a requester on more than maxKeysPerRequester keys REQUESTER_LIMIT, a grant and a ticket alike`, async () => {
    const requester = unique('busy');
    const [k1, k2, k3, k4] = [1, 2, 3, 4].map((i) => unique(`${harness.name}-per-requester-${i}`));
    const ask = (key: string, who = requester) => locks.tryAcquire({ key, requester: who, ttlMs: 30_000 });
    const held = await ask(k1!); // holds k1
    const other = unique('other');
    await ask(k2!, other); // k2 held by another: the requester queues there
    expect(denialOf(await ask(k2!)).code).toBe('HELD');
    // Two keys engaged: a free key is refused, and so is a place in another queue.
    expect(denialOf(await ask(k3!))).toMatchObject({ code: 'REQUESTER_LIMIT', position: null });
    await ask(k4!, other);
    expect(denialOf(await ask(k4!)).code).toBe('REQUESTER_LIMIT');
    expect((await locks.inspect(k4!)).waiters).toEqual([]);
    // What it has already goes on: its queued place refreshes, its lease is its own.
    expect(denialOf(await ask(k2!))).toMatchObject({ code: 'HELD', position: 1 });
    if (held.granted) {
      expect(await ask(k1!)).toMatchObject({ granted: true, lease: { token: held.lease.token } });
      // Released, k1 no longer counts: k3 is granted.
      await locks.release(held.lease);
    }
    const third = await ask(k3!);
    expect(third.granted).toBe(true);
    if (third.granted) await locks.release(third.lease);
    await locks.leave({ key: k2!, requester });
  });
});
