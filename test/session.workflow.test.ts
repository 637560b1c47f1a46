import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowFailedError } from '@temporalio/client';
import pino from 'pino';
import { createMetrics } from '../activities/metrics';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { FileEscalationStore } from '../activities/escalationStore';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import {
  acquire,
  acquisitionWorkflowId,
  forceRelease,
  release,
  resolve,
  startAcquisition,
  stateOf,
} from '../client/lockwardenClient';
import type { SqliteLockService } from '../locks/sqliteLockService';
import { SEARCH_ATTRIBUTES } from '../policy/constants';
import { InvalidLockRequestError, LockNotAcquiredError } from '../policy/errors';
import type { Lease } from '../policy/lockSchemas';
import { FakeMessagesApi } from './support/fakeMessagesApi';
import { activitySummaries, timerSummaries } from './support/history';
import {
  connectTestEnv,
  freshSqliteLockService,
  silentLog,
  unique,
  withWorker,
} from './support/temporalFixture';
import { freshSqlitePath } from './support/tempFiles';
import { waitFor } from './support/waitFor';

describe('acquisition sessions on the dev server', () => {
  let env: TestWorkflowEnvironment;
  let locks: SqliteLockService;
  let escalations: FileEscalationStore;
  let key: string;
  const deps = () => ({ locks, log: silentLog, escalations });

  beforeAll(async () => {
    env = await connectTestEnv();
  });
  afterAll(() => env?.teardown());
  beforeEach(() => {
    locks = freshSqliteLockService();
    escalations = new FileEscalationStore(freshSqlitePath().replace(/\.sqlite$/, '.jsonl'));
    key = unique('key');
  });
  afterEach(() => locks.close());

  const phaseIs = (workflowId: string, phase: string) => async () =>
    (await stateOf(env.client, workflowId)).phase === phase;

  it('fast path: acquires, holds with the token the service issued, answers the state query, and releases fenced', async () => {
    await withWorker(env, deps(), async (taskQueue) => {
      const { lease, session } = await acquire(env.client, { key, requester: 'replica-a' }, { taskQueue });
      expect(lease).toMatchObject({ key, holder: 'replica-a', token: '1' });
      const state = await stateOf(env.client, session.workflowId);
      expect(state).toMatchObject({
        phase: 'holding',
        attempts: 1,
        holder: 'replica-a',
        lease: { token: '1' },
        escalation: null,
      });
      const description = await env.client.workflow.getHandle(session.workflowId).describe();
      expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockState)).toBe('holding');
      expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockKey)).toBe(key);
      expect(await description.staticSummary()).toBe(`acquire ${key} for replica-a`);
      expect((await locks.inspect(key)).holder).toBe('replica-a');
      expect(await release(env.client, lease)).toMatchObject({ ok: true });
      expect(await session.result()).toMatchObject({ status: 'released', lease: { token: '1' } });
      expect((await locks.inspect(key)).holder).toBeNull();
    });
  });

  it('retry then acquire: backs off on summarized timers while the key is held, then takes it', async () => {
    const held = await locks.tryAcquire({ key, requester: 'outsider', ttlMs: 60_000 });
    if (!held.granted) throw new Error('setup');
    await withWorker(env, deps(), async (taskQueue) => {
      const session = await startAcquisition(
        env.client,
        { key, requester: 'replica-b', budget: { baseBackoffMs: 50, maxBackoffMs: 200 } },
        { taskQueue },
      );
      const handle = env.client.workflow.getHandle(session.workflowId);
      await waitFor('two back-offs', async () => timerSummaries(await handle.fetchHistory()).length >= 2);
      await locks.release(held.lease); // released outside lockwarden: no wake-up signal, the next timer finds it free
      await waitFor('holding', phaseIs(session.workflowId, 'holding'));
      const state = await stateOf(env.client, session.workflowId);
      expect(state.attempts).toBeGreaterThanOrEqual(3);
      expect(state.decisions[0]).toMatchObject({ provider: 'policy', decision: 'retry' });
      for (const summary of timerSummaries(await handle.fetchHistory()).filter((s) =>
        s.startsWith('backoff'),
      )) {
        const ms = Number(
          /^backoff (\d+) ms, decorrelated-jitter, attempt \d+ of 21: .+$/.exec(summary)?.[1],
        );
        expect(ms).toBeGreaterThanOrEqual(50);
        expect(ms).toBeLessThanOrEqual(200);
      }
      await release(env.client, state.lease!);
    });
  });

  it('wake-on-release: a release by the holding session wakes the waiter long before its back-off ends', async () => {
    await withWorker(env, deps(), async (taskQueue) => {
      const holder = await acquire(env.client, { key, requester: 'holder' }, { taskQueue });
      const waiter = await startAcquisition(
        env.client,
        { key, requester: 'waiter', budget: { baseBackoffMs: 8_000, maxBackoffMs: 8_000 } },
        { taskQueue },
      );
      const handle = env.client.workflow.getHandle(waiter.workflowId);
      await waitFor('the waiter backing off', phaseIs(waiter.workflowId, 'backing-off'));
      const releasedAt = Date.now();
      await release(env.client, holder.lease);
      await waitFor('the waiter holding', phaseIs(waiter.workflowId, 'holding'));
      const handoffMs = Date.now() - releasedAt;
      expect(handoffMs).toBeLessThan(4_000); // its back-off was 8 000 ms
      const events = (await handle.fetchHistory()).events ?? [];
      expect(events.some((e) => e.timerCanceledEventAttributes)).toBe(true);
      expect(timerSummaries(await handle.fetchHistory())[0]).toMatch(/^backoff 8000 ms/);
      await release(env.client, (await stateOf(env.client, waiter.workflowId)).lease!);
    });
  });

  it('escalates, waits for the operator, and acquires after the operator grants more budget', async () => {
    const held = await locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    if (!held.granted) throw new Error('setup');
    await withWorker(env, deps(), async (taskQueue) => {
      const session = await startAcquisition(
        env.client,
        { key, requester: 'replica-b', budget: { maxRetries: 0 } },
        { taskQueue },
      );
      await waitFor('escalated', phaseIs(session.workflowId, 'escalated'));
      const state = await stateOf(env.client, session.workflowId);
      expect(state.escalation).toMatchObject({
        reason: 'budget spent (max-retries)',
        deadlock: false,
        resolution: null,
      });
      expect(await escalations.recentForKey(key, new Date(0))).toBe(1);
      await locks.release(held.lease);
      await resolve(env.client, session.workflowId, {
        action: 'retry',
        extraRetries: 3,
        operator: 'alice',
        reason: 'stuck job killed',
      });
      await waitFor('holding', phaseIs(session.workflowId, 'holding'));
      expect((await stateOf(env.client, session.workflowId)).escalation?.resolution).toMatchObject({
        action: 'retry',
        operator: 'alice',
      });
      await release(env.client, (await stateOf(env.client, session.workflowId)).lease!);
    });
  });

  it('pages on-call through the webhook with the documented payload', async () => {
    await locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    const received: unknown[] = [];
    const hook = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    const webhookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/page`;
    try {
      await withWorker(
        env,
        { ...deps(), oncall: { webhookUrl, reviewWindowMs: 600_000, reviewThreshold: 3 } },
        async (taskQueue) => {
          const session = await startAcquisition(
            env.client,
            { key, requester: 'replica-b', budget: { maxRetries: 0 }, escalationTimeoutMs: 1_000 },
            { taskQueue },
          );
          await session.result();
          expect(received).toEqual([
            expect.objectContaining({
              type: 'lockwarden.escalation',
              key,
              requester: 'replica-b',
              workflowId: session.workflowId,
              reason: 'budget spent (max-retries)',
              deadlock: false,
              attempts: 1,
              flaggedForReview: false,
              resolve: expect.objectContaining({
                signal: 'resolveEscalation',
                workflowId: session.workflowId,
              }),
            }),
          ]);
        },
      );
    } finally {
      hook.close();
    }
  });

  it('flags a key that keeps escalating for deadlock review: a log line, a metric and a search attribute', async () => {
    await locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const metrics = createMetrics();
    await withWorker(
      env,
      { ...deps(), log, metrics, oncall: { webhookUrl: null, reviewWindowMs: 600_000, reviewThreshold: 3 } },
      async (taskQueue) => {
        const sessions = [];
        for (const requester of ['w1', 'w2', 'w3']) {
          const session = await startAcquisition(
            env.client,
            { key, requester, budget: { maxRetries: 0 }, escalationTimeoutMs: 1_000 },
            { taskQueue },
          );
          await session.result();
          sessions.push(session);
        }
        const review = async (workflowId: string) =>
          (await env.client.workflow.getHandle(workflowId).describe()).typedSearchAttributes.get(
            SEARCH_ATTRIBUTES.lockReview,
          );
        expect(await review(sessions[0]!.workflowId)).toBeUndefined();
        expect(await review(sessions[2]!.workflowId)).toBe(true);
        expect((await metrics.keysFlaggedForReview.get()).values).toEqual([{ value: 1, labels: { key } }]);
        const flagged = lines
          .map((l) => JSON.parse(l) as { event?: string; key?: string })
          .filter((l) => l.event === 'lock.flagged-for-review');
        expect(flagged).toEqual([expect.objectContaining({ key, recentEscalations: 3 })]);
      },
    );
  });

  it('escalates and abandons when no operator answers in time', async () => {
    await locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    await withWorker(env, deps(), async (taskQueue) => {
      const session = await startAcquisition(
        env.client,
        { key, requester: 'replica-b', budget: { maxRetries: 0 }, escalationTimeoutMs: 1_000 },
        { taskQueue },
      );
      const outcome = await session.result();
      expect(outcome).toMatchObject({
        status: 'abandoned',
        reason: expect.stringContaining('no operator answer within 1000 ms'),
      });
      expect((await locks.inspect(key)).waiters).toEqual([]);
      await expect(
        acquire(
          env.client,
          { key, requester: 'another', budget: { maxRetries: 0 }, escalationTimeoutMs: 1_000 },
          { taskQueue },
        ),
      ).rejects.toThrow(LockNotAcquiredError);
    });
  });

  it('escalates when the budget is spent even though the model keeps saying retry', async () => {
    await locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    const fake = await new FakeMessagesApi().start();
    const retry = {
      decision: 'retry',
      retry_after_ms: 60,
      backoff_strategy: 'linear',
      lease_renewal_instruction: null,
      starvation_risk: 'low',
      deadlock_detected: false,
      escalation_reason: null,
      explanation: 'Try again.',
    };
    fake.answer({ kind: 'tool', input: retry });
    const decider = createAnthropicDecider({
      apiKey: 'k',
      baseURL: fake.baseURL,
      model: 'm',
      largeModel: 'm',
      timeoutMs: 2_000,
      maxTokens: 256,
    });
    try {
      await withWorker(env, { ...deps(), decider }, async (taskQueue) => {
        const session = await startAcquisition(
          env.client,
          { key, requester: 'replica-b', budget: { maxRetries: 2 }, escalationTimeoutMs: 1_000 },
          { taskQueue },
        );
        expect(await session.result()).toMatchObject({
          status: 'abandoned',
          attempts: 3,
          reason: expect.stringContaining('budget spent (max-retries)'),
        });
        expect(fake.requests).toHaveLength(3); // asked each time, and each time overruled on the third
      });
    } finally {
      await fake.stop();
    }
  });

  it('finds a deadlock between two sessions from the service holdings: both stop, one escalation for the cycle', async () => {
    const [a, b] = [unique('a'), unique('b')];
    await withWorker(env, deps(), async (taskQueue) => {
      const holdA = await acquire(env.client, { key: a, requester: 'alpha' }, { taskQueue });
      const holdB = await acquire(env.client, { key: b, requester: 'beta' }, { taskQueue });
      const budget = { baseBackoffMs: 50, maxBackoffMs: 200 };
      const alphaWaits = await startAcquisition(
        env.client,
        { key: b, requester: 'alpha', budget },
        { taskQueue },
      );
      const betaWaits = await startAcquisition(
        env.client,
        { key: a, requester: 'beta', budget },
        { taskQueue },
      );
      expect(await betaWaits.result()).toMatchObject({
        status: 'halted',
        reason: expect.stringContaining('escalated by alpha'),
      });
      await waitFor('alpha escalated', phaseIs(alphaWaits.workflowId, 'escalated'));
      expect((await stateOf(env.client, alphaWaits.workflowId)).escalation).toMatchObject({
        deadlock: true,
        reason: expect.stringMatching(
          /^deadlock: (alpha waits for \S+ held by beta|beta waits for \S+ held by alpha); (alpha|beta) waits/,
        ),
      });
      expect(
        (await escalations.recentForKey(a, new Date(0))) + (await escalations.recentForKey(b, new Date(0))),
      ).toBe(1);
      await resolve(env.client, alphaWaits.workflowId, {
        action: 'abandon',
        operator: 'bob',
        reason: 'breaking the cycle',
      });
      expect(await alphaWaits.result()).toMatchObject({
        status: 'abandoned',
        reason: 'abandoned by bob: breaking the cycle',
      });
      await release(env.client, holdA.lease);
      await release(env.client, holdB.lease);
    });
  });

  it('ends the hold as lease-lost when the service shows another token, and renews nothing with it', async () => {
    await withWorker(env, deps(), async (taskQueue) => {
      const { lease, session } = await acquire(
        env.client,
        { key, requester: 'replica-a', ttlMs: 1_500 },
        { taskQueue },
      );
      // Another party takes the key under the session's feet (as after a pause past the TTL).
      expect(await locks.release(lease)).toMatchObject({ ok: true });
      const intruder = await locks.tryAcquire({ key, requester: 'replica-b', ttlMs: 60_000 });
      if (!intruder.granted) throw new Error('setup');
      const outcome = await session.result();
      expect(outcome).toMatchObject({
        status: 'lease-lost',
        reason: expect.stringContaining(
          `token ${intruder.lease.token} for replica-b, not token ${lease.token}`,
        ),
      });
      expect(await locks.inspect(key)).toMatchObject({
        holder: 'replica-b',
        token: intruder.lease.token,
        leaseUntil: intruder.lease.leaseUntil,
      });
      expect(
        activitySummaries(await env.client.workflow.getHandle(session.workflowId).fetchHistory()),
      ).toContain(`renew token ${lease.token}`);
    });
  });

  it('runs a job under withLock from another workflow and releases the lock after it', async () => {
    await withWorker(env, deps(), async (taskQueue) => {
      const lease = await env.client.workflow.execute<(r: object, ms: number) => Promise<Lease>>(
        'holdLockFor',
        {
          taskQueue,
          workflowId: unique('job'),
          args: [{ key, requester: 'nightly-job' }, 300],
        },
      );
      expect(lease).toMatchObject({ key, holder: 'nightly-job', token: '1' });
      expect((await locks.inspect(key)).holder).toBeNull();
      const child = await env.client.workflow.getHandle(acquisitionWorkflowId(key, 'nightly-job')).result();
      expect(child).toMatchObject({ status: 'released' });
    });
  });

  it('fails a malformed request fast, with a non-retryable typed failure, before touching the lock service', async () => {
    await expect(startAcquisition(env.client, { key: '', requester: 'x' })).rejects.toThrow(
      InvalidLockRequestError,
    );
    await withWorker(env, deps(), async (taskQueue) => {
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

  it('force-releases through a fenced workflow: a stale token is refused and the holder keeps the lease', async () => {
    const held = await locks.tryAcquire({ key, requester: 'owner', ttlMs: 60_000 });
    if (!held.granted) throw new Error('setup');
    await withWorker(env, deps(), async (taskQueue) => {
      expect(await forceRelease(env.client, { ...held.lease, token: '999' }, { taskQueue })).toMatchObject({
        ok: false,
        reason: 'stale-token',
      });
      expect((await locks.inspect(key)).holder).toBe('owner');
      expect(await forceRelease(env.client, held.lease, { taskQueue })).toMatchObject({ ok: true });
    });
  });
});
