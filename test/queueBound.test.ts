// A key's queue has a bound: a newcomer beyond it is denied QUEUE_FULL and takes no ticket, on every
// backend, while those already queued keep their places.
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import type { AcquireAttempt } from '../policy/lockContract/lockSchemas';
import { backendHarnesses } from './support/lockBackends';
import { unique } from '../devkit/tempFiles';

const MAX_WAITERS = 3;

function denialOf(attempt: AcquireAttempt) {
  if (attempt.granted) throw new Error(`expected a denial, got token ${attempt.lease.token}`);
  return attempt.denial;
}

describe.each(backendHarnesses())('the queue bound on $name', (harness) => {
  let locks: LockService;
  beforeAll(async () => {
    locks = await openLockService(harness.url, { maxWaitersPerKey: MAX_WAITERS });
  });
  afterAll(() => locks?.close());

  it(`[${harness.name}] denies a waiter beyond maxWaitersPerKey with QUEUE_FULL and no ticket; the queued keep their places`, async () => {
    const key = unique(`${harness.name}-bounded`);
    const ask = (requester: string) => locks.tryAcquire({ key, requester, ttlMs: 30_000 });
    const holder = await ask('holder');
    for (const w of ['w1', 'w2', 'w3']) expect(denialOf(await ask(w)).code).toBe('HELD');
    const refused = denialOf(await ask('w4'));
    expect(refused).toMatchObject({
      code: 'QUEUE_FULL',
      position: null,
      waiters: MAX_WAITERS,
      holder: 'holder',
    });
    expect((await locks.inspect(key)).waiters).toEqual(['w1', 'w2', 'w3']);
    // A waiter already queued asks again (its ticket's refresh): still its place, not refused.
    expect(denialOf(await ask('w3'))).toMatchObject({ code: 'HELD', position: 3 });
    await locks.leave({ key, requester: 'w1' });
    expect(denialOf(await ask('w4'))).toMatchObject({ code: 'HELD', position: 3 });
    if (holder.granted) await locks.release(holder.lease);
    for (const w of ['w2', 'w3', 'w4']) await locks.leave({ key, requester: w });
  });
});
