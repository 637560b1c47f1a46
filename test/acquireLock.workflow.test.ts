import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { acquisitionWorkflowId, releaseLease, startAcquisition } from '../client/lockwardenClient';
import type { SqliteLockService } from '../locks/sqliteLockService';
import { SEARCH_ATTRIBUTES } from '../policy/constants';
import { InvalidLockRequestError } from '../policy/errors';
import { activitySummaries, timerSummaries } from './support/history';
import {
  connectTestEnv,
  freshSqliteLockService,
  silentLog,
  unique,
  withWorker,
} from './support/temporalFixture';

describe('acquireLock workflow on the dev server', () => {
  let env: TestWorkflowEnvironment;
  let locks: SqliteLockService;

  beforeAll(async () => {
    env = await connectTestEnv();
  });
  afterAll(() => env?.teardown());
  beforeEach(() => {
    locks = freshSqliteLockService();
  });
  afterEach(() => locks.close());

  it('acquires an uncontended lock on the fast path and tags the session with its key', async () => {
    const key = unique('billing');
    const requester = unique('replica');
    await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
      const session = await startAcquisition(env.client, { key, requester }, { taskQueue });
      const outcome = await session.result();
      expect(outcome).toMatchObject({
        status: 'acquired',
        attempts: 1,
        lease: { key, holder: requester, token: '1' },
      });
      const handle = env.client.workflow.getHandle(session.workflowId);
      const description = await handle.describe();
      expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockKey)).toBe(key);
      expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockState)).toBe('acquired');
      expect(await description.staticSummary()).toBe(`acquire ${key} for ${requester}`);
      expect(activitySummaries(await handle.fetchHistory())).toEqual(['fast path, attempt 1']);
      expect((await locks.inspect(key)).holder).toBe(requester);
    });
  });

  it('backs off with summarized durable timers while the key is held, then acquires after the holder releases', async () => {
    const key = unique('export');
    const holder = await locks.tryAcquire({ key, requester: 'replica-a', ttlMs: 60_000 });
    if (!holder.granted) throw new Error('setup: expected to hold the key');
    await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
      const session = await startAcquisition(
        env.client,
        { key, requester: 'replica-b', budget: { baseBackoffMs: 50, maxBackoffMs: 200 } },
        { taskQueue },
      );
      const handle = env.client.workflow.getHandle(session.workflowId);
      await waitFor(async () => timerSummaries(await handle.fetchHistory()).length >= 2);
      expect((await locks.release(holder.lease)).ok).toBe(true);
      const outcome = await session.result();
      expect(outcome.status).toBe('acquired');
      if (outcome.status !== 'acquired') return;
      expect(outcome.attempts).toBeGreaterThanOrEqual(3);
      expect(BigInt(outcome.lease.token)).toBeGreaterThan(BigInt(holder.lease.token));
      const summaries = timerSummaries(await handle.fetchHistory());
      expect(summaries.length).toBe(outcome.attempts - 1);
      for (const summary of summaries) {
        const ms = Number(
          /^backoff (\d+) ms, decorrelated-jitter, attempt \d+ of 21: .+$/.exec(summary)?.[1],
        );
        expect(ms).toBeGreaterThanOrEqual(50);
        expect(ms).toBeLessThanOrEqual(200);
      }
    });
  });

  it('escalates once max_retries is used, whatever the holder does, and hands back its queue place', async () => {
    const key = unique('leader');
    await locks.tryAcquire({ key, requester: 'incumbent', ttlMs: 60_000 });
    await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
      const session = await startAcquisition(
        env.client,
        { key, requester: 'challenger', budget: { maxRetries: 2, baseBackoffMs: 50, maxBackoffMs: 100 } },
        { taskQueue },
      );
      const outcome = await session.result();
      expect(outcome).toMatchObject({
        status: 'escalated',
        reason: 'budget spent (max-retries)',
        attempts: 3,
        lastDenial: { code: 'HELD', holder: 'incumbent' },
      });
      const description = await env.client.workflow.getHandle(session.workflowId).describe();
      expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockState)).toBe('escalated');
      // It waited under FIFO, so it held a ticket; giving up must hand that place back.
      expect((await locks.inspect(key)).waiters).toEqual([]);
    });
  });

  it('fails a malformed request fast, with a non-retryable typed failure, before touching the lock service', async () => {
    await expect(startAcquisition(env.client, { key: '', requester: 'x' })).rejects.toThrow(
      InvalidLockRequestError,
    );
    await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
      // Bypass the client's validation to prove the workflow validates again.
      const handle = await env.client.workflow.start('acquireLock', {
        taskQueue,
        workflowId: acquisitionWorkflowId('bad', unique('r')),
        args: [{ key: 'bad', requester: 'r', ttlMs: -5 }],
      });
      const failure = handle.result();
      await expect(failure).rejects.toThrow(WorkflowFailedError);
      await expect(failure).rejects.toMatchObject({
        cause: {
          type: 'InvalidLockRequest',
          nonRetryable: true,
          message: expect.stringContaining('ttlMs: must be greater than 0'),
        },
      });
      expect((await locks.inspect('bad')).lastToken).toBeNull();
    });
  });

  it('releases through a fenced workflow: a stale token is refused and the holder keeps the lease', async () => {
    const key = unique('fenced');
    await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
      const outcome = await (
        await startAcquisition(env.client, { key, requester: 'owner' }, { taskQueue })
      ).result();
      if (outcome.status !== 'acquired') throw new Error('expected to acquire');
      const stale = await releaseLease(env.client, { ...outcome.lease, token: '999' }, { taskQueue });
      expect(stale).toMatchObject({ ok: false, reason: 'stale-token' });
      expect((await locks.inspect(key)).holder).toBe('owner');
      expect(await releaseLease(env.client, outcome.lease, { taskQueue })).toMatchObject({ ok: true });
      expect((await locks.inspect(key)).holder).toBeNull();
    });
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
