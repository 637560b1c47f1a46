import { setTimeout as delay } from 'node:timers/promises';
import fc from 'fast-check';
import type { LockService } from '../locks/lockService';
import { isInvalidLockRequest } from '../policy/errors';
import { backendHarnesses } from './support/lockBackends';
import { unique } from '../devkit/tempFiles';

// Malformed and adversarial requests at every operation of every backend: each is refused in-process,
// before any call reaches the server, with a typed InvalidLockRequest, and the key's state on the
// real server (holder, token, deadline, queue), read back from it, is exactly what it was. RUNS cases per operation and backend.
const RUNS = 150;

/** Names no entry accepts: empty, blank, padded, invisible, bidi, broken UTF-16, too long, not strings. */
const badName = fc.constantFrom<unknown>(
  '',
  '   ',
  ' padded',
  'padded ',
  'a\u202Eb',
  '\u2066isolate',
  'zero\u200Bwidth',
  '\uFEFFbom',
  'lone\uD800',
  'bell\u0007',
  'x'.repeat(300),
  42,
  null,
  undefined,
  {},
  ['k'],
);
const badRequester = fc.oneof(badName, fc.constantFrom('postgres://u:p@db/x', 'admin:hunter2@10.0.0.5:6379'));
const badToken = fc.constantFrom<unknown>(
  '0',
  '-1',
  '01',
  '1e3',
  ' 1',
  '1 ',
  '',
  'abc',
  '9'.repeat(40),
  1,
  null,
  {},
);
const badTtl = fc.constantFrom<unknown>(0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 'soon', 1e12, null);
/** Replaces one field of `valid` with a bad value, adds an unknown field, or sends no object at all. */
function corrupt<T extends Record<string, unknown>>(
  valid: T,
  fields: { [K in keyof T]?: fc.Arbitrary<unknown> },
): fc.Arbitrary<unknown> {
  const replaced = Object.entries(fields).map(([field, bad]) =>
    (bad as fc.Arbitrary<unknown>).map((value) => ({ ...valid, [field]: value })),
  );
  return fc.oneof(
    ...replaced,
    fc
      .constantFrom('token', 'holder', 'requester', 'leaseUntil', 'fencing')
      .filter((extra) => !(extra in valid))
      .map((extra) => ({ ...valid, [extra]: '1' })),
    fc.constantFrom<unknown>(null, 'k', 42, [], undefined),
  );
}

// etcd reports a lease's deadline as its remaining TTL read now, so two reads differ by a few ms: it
// is compared to the second. The fixture's lease is a few seconds old by then, so a renewal (back to
// the full TTL) would move it by more.
const DEADLINE_TOLERANCE_MS = { sqlite: 0, redis: 0, postgres: 0, etcd: 1_000, zookeeper: 0 };
const FIXTURE_AGE_MS = 3_000;

/** What must not change: the key's holder, token, deadline and queue. */
const stateOf = async (locks: LockService, key: string) => {
  const record = await locks.inspect(key);
  return {
    holder: record.holder,
    token: record.token,
    leaseUntil: record.leaseUntil,
    waiters: record.waiters,
  };
};

describe.each(backendHarnesses())('bad input refused before it reaches $name', (harness) => {
  let locks: LockService;
  let key: string;
  let token: string;

  beforeAll(async () => {
    locks = await harness.open();
    key = unique(`${harness.name}-bad-input`);
    const held = await locks.tryAcquire({ key, requester: 'holder', ttlMs: 60_000 });
    if (!held.granted) throw new Error('setup: the key is held');
    token = held.lease.token;
    await locks.tryAcquire({ key, requester: 'waiter', ttlMs: 60_000 });
    if (DEADLINE_TOLERANCE_MS[harness.backend] > 0) await delay(FIXTURE_AGE_MS);
  }, 10_000);
  afterAll(() => locks?.close());

  async function refusedUnchanged(call: () => Promise<unknown>): Promise<void> {
    const before = await stateOf(locks, key);
    const error = await call().then(
      () => null,
      (e: unknown) => e,
    );
    expect(isInvalidLockRequest(error)).toBe(true);
    const after = await stateOf(locks, key);
    expect({ ...after, leaseUntil: null }).toEqual({ ...before, leaseUntil: null });
    expect(Math.abs(after.leaseUntil! - before.leaseUntil!)).toBeLessThanOrEqual(
      DEADLINE_TOLERANCE_MS[harness.backend],
    );
  }
  const property = (input: fc.Arbitrary<unknown>, call: (request: never) => Promise<unknown>) =>
    fc.assert(
      fc.asyncProperty(input, (request) => refusedUnchanged(() => call(request as never))),
      { numRuns: RUNS },
    );

  it(`[${harness.name}] tryAcquire refuses malformed requests, typed, and the server's state is unchanged`, async () => {
    const valid = { key, requester: 'newcomer', ttlMs: 30_000 };
    const extra = {
      fairness: fc.constantFrom<unknown>('LIFO', '', 5),
      priority: fc.constantFrom<unknown>(-1, 1.5, 1e6, '1'),
    };
    await property(corrupt(valid, { key: badName, requester: badRequester, ttlMs: badTtl, ...extra }), (r) =>
      locks.tryAcquire(r),
    );
  });

  it(`[${harness.name}] renew and release refuse malformed targets, typed, and the server's state is unchanged`, async () => {
    const target = { key, holder: 'holder', token };
    const bad = corrupt(target, { key: badName, holder: badName, token: badToken });
    await property(bad, (t) => locks.renew(t));
    await property(bad, (t) => locks.release(t));
  });

  it(`[${harness.name}] leave refuses malformed waiters, typed, and the server's state is unchanged`, async () => {
    await property(corrupt({ key, requester: 'waiter' }, { key: badName, requester: badName }), (w) =>
      locks.leave(w),
    );
  });
});
