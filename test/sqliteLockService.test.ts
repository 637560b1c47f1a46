import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { SqliteLockService } from '../locks/sqliteLockService';
import { InvalidLockRequestError } from '../policy/errors';
import type { AcquireAttempt, Lease } from '../policy/lockSchemas';

const run = promisify(execFile);

function granted(attempt: AcquireAttempt): Lease {
  if (!attempt.granted) throw new Error(`expected a grant, got ${attempt.denial.code}`);
  return attempt.lease;
}

describe('SqliteLockService', () => {
  let file: string;
  let locks: SqliteLockService;

  beforeEach(() => {
    file = path.join(os.tmpdir(), `lockwarden-sqlite-${randomUUID()}.sqlite`);
    locks = new SqliteLockService({ path: file, maxTtlMs: 60_000 });
  });
  afterEach(() => locks.close());

  it('denies a second requester while the lease is live, naming the holder and its deadline', async () => {
    const lease = granted(await locks.tryAcquire({ key: 'k', requester: 'a', ttlMs: 10_000 }));
    const second = await locks.tryAcquire({ key: 'k', requester: 'b', ttlMs: 10_000 });
    expect(second).toEqual({
      granted: false,
      denial: expect.objectContaining({ code: 'HELD', holder: 'a', holderLeaseUntil: lease.leaseUntil }),
    });
    if (!second.granted) expect(second.denial.serviceTime).toBeLessThan(lease.leaseUntil);
  });

  it('issues strictly increasing tokens per key that survive closing and reopening the file', async () => {
    const tokens: bigint[] = [];
    for (let round = 0; round < 3; round++) {
      const lease = granted(await locks.tryAcquire({ key: 'k', requester: `r${round}`, ttlMs: 10_000 }));
      tokens.push(BigInt(lease.token));
      expect((await locks.release(lease)).ok).toBe(true);
      await locks.close();
      locks = new SqliteLockService({ path: file });
    }
    expect(tokens).toEqual([1n, 2n, 3n]);
    const other = granted(await locks.tryAcquire({ key: 'other', requester: 'r', ttlMs: 10_000 }));
    expect(other.token).toBe('1');
    expect((await locks.inspect('k')).lastToken).toBe('3');
  });

  it('expires a lease on its own clock and grants the next requester a newer token', async () => {
    const first = granted(await locks.tryAcquire({ key: 'k', requester: 'a', ttlMs: 150 }));
    expect(first.leaseUntil - first.grantedAt).toBe(150);
    expect((await locks.tryAcquire({ key: 'k', requester: 'b', ttlMs: 1_000 })).granted).toBe(false);
    await delay(250);
    expect((await locks.inspect('k')).holder).toBeNull();
    const second = granted(await locks.tryAcquire({ key: 'k', requester: 'b', ttlMs: 1_000 }));
    expect(BigInt(second.token)).toBeGreaterThan(BigInt(first.token));
    expect(second.grantedAt).toBeGreaterThanOrEqual(first.leaseUntil);
  });

  it('lets only the holder with the current token release, and a refused release changes nothing', async () => {
    const lease = granted(await locks.tryAcquire({ key: 'k', requester: 'a', ttlMs: 10_000 }));
    expect(await locks.release({ key: 'k', holder: 'b', token: lease.token })).toMatchObject({
      ok: false,
      reason: 'not-holder',
    });
    expect(await locks.release({ key: 'k', holder: 'a', token: '999' })).toMatchObject({
      ok: false,
      reason: 'stale-token',
    });
    expect((await locks.inspect('k')).holder).toBe('a');
    expect(await locks.release(lease)).toMatchObject({ ok: true });
    expect((await locks.inspect('k')).holder).toBeNull();
  });

  it('renews only a live lease whose token is current, by its original TTL', async () => {
    const lease = granted(await locks.tryAcquire({ key: 'k', requester: 'a', ttlMs: 300 }));
    expect(await locks.renew({ ...lease, token: String(BigInt(lease.token) + 1n) })).toMatchObject({
      ok: false,
      reason: 'stale-token',
    });
    await delay(100);
    const renewed = await locks.renew(lease);
    expect(renewed.ok).toBe(true);
    if (renewed.ok) expect(renewed.leaseUntil).toBe(renewed.serviceTime + 300);
    await delay(400);
    expect(await locks.renew(lease)).toMatchObject({ ok: false, reason: 'expired' });
  });

  it('answers a requester that already holds the key with its existing lease, not a new token', async () => {
    const first = granted(await locks.tryAcquire({ key: 'k', requester: 'a', ttlMs: 10_000 }));
    const again = granted(await locks.tryAcquire({ key: 'k', requester: 'a', ttlMs: 10_000 }));
    expect(again).toEqual(first);
  });

  it.each([
    ['an empty key', { key: '', requester: 'a', ttlMs: 1_000 }, /key: must not be empty/],
    ['an oversized key', { key: 'k'.repeat(257), requester: 'a', ttlMs: 1_000 }, /key: must be at most 256/],
    [
      'a key with control characters',
      { key: 'a\nb', requester: 'a', ttlMs: 1_000 },
      /key: must not contain control/,
    ],
    ['a zero TTL', { key: 'k', requester: 'a', ttlMs: 0 }, /ttlMs: must be greater than 0/],
    [
      'a TTL above the configured maximum',
      { key: 'k', requester: 'a', ttlMs: 60_001 },
      /ttlMs: must be at most 60000/,
    ],
    ['a non-string holder', { key: 'k', requester: 42, ttlMs: 1_000 }, /requester: must be a string/],
  ])('rejects %s with a typed error and stores nothing', async (_, request, message) => {
    await expect(locks.tryAcquire(request as never)).rejects.toThrow(InvalidLockRequestError);
    await expect(locks.tryAcquire(request as never)).rejects.toThrow(message);
    expect((await locks.inspect('k')).lastToken).toBeNull();
  });

  it('keeps two processes sharing the file from ever holding the key at once', async () => {
    const script = path.join(__dirname, 'support', 'contendFromProcess.ts');
    const contend = (name: string) =>
      run(process.execPath, ['--import', 'tsx', script, file, 'shared', name, '150'], {
        cwd: path.join(__dirname, '..'),
      });
    const outputs = await Promise.all([contend('p1'), contend('p2')]);
    const holds = outputs.map(({ stdout }) =>
      stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { token: string; grantedAt: number; releasedAt: number }),
    );
    expect(holds[0]!.length).toBeGreaterThan(0);
    expect(holds[1]!.length).toBeGreaterThan(0);
    const all = holds.flat().sort((a, b) => Number(BigInt(a.token) - BigInt(b.token)));
    expect(new Set(all.map((h) => h.token)).size).toBe(all.length);
    for (let i = 1; i < all.length; i++) {
      expect(all[i]!.grantedAt).toBeGreaterThanOrEqual(all[i - 1]!.releasedAt);
    }
  });
});
