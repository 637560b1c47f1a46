import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  acquire,
  acquisitionWorkflowId,
  awaitLeaseOf,
  release,
  startAcquisition,
  stateOf,
} from '../client/lockwardenClient';
import { requestRelease } from '../temporal/messages';
import type { LockService } from '../locks/lockService';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { activitySummaries } from '../devkit/history';
import { freshSqliteLockService, silentLog, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// A second dev server of our own, started like the main one but told to suggest continue-as-new after
// 40 history events, so a session reaches that point within seconds instead of days.
const PORT = 7245;
function startSmallHistoryServer(): ChildProcess {
  const root = path.join(__dirname, '..');
  const temporal = execFileSync('bash', [path.join(root, 'scripts', 'install-temporal.sh')])
    .toString('utf8')
    .trim();
  const attributes = fs
    .readFileSync(path.join(root, 'scripts', 'search-attributes.txt'), 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .flatMap((entry) => ['--search-attribute', entry]);
  const settings = execFileSync('bash', [path.join(root, 'scripts', 'temporal-server.sh'), 'settings'])
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((setting) => ['--dynamic-config-value', setting]);
  return spawn(
    temporal,
    [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(PORT),
      '--headless',
      '--log-level',
      'error',
      ...attributes,
      ...settings,
      '--dynamic-config-value',
      'limit.historyCount.suggestContinueAsNew=40',
    ],
    { stdio: 'ignore' },
  );
}

describe('long sessions', () => {
  let server: ChildProcess;
  let env: TestWorkflowEnvironment;

  beforeAll(async () => {
    server = startSmallHistoryServer();
    await waitFor(
      'the small-history dev server',
      async () => {
        env = await TestWorkflowEnvironment.createFromExistingServer({ address: `127.0.0.1:${PORT}` });
        return true;
      },
      30_000,
    );
  }, 40_000);
  afterAll(async () => {
    await env?.teardown();
    const exited = new Promise((resolve) => server?.once('exit', resolve));
    server?.kill('SIGTERM');
    await exited;
  });

  it('holds past the point where the server suggests continue-as-new: one run, no event a renewal, released', async () => {
    const locks = freshSqliteLockService();
    const key = unique('long-hold');
    try {
      await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
        const { lease, session } = await acquire(
          env.client,
          { key, requester: 'long-job', ttlMs: 1_200 },
          { taskQueue },
        );
        const handle = env.client.workflow.getHandle(session.workflowId);
        // Counted once the keeper runs (it starts half a renewal interval into the hold).
        await waitFor('the keeper running', async () =>
          ((await handle.describe()).raw.pendingActivities ?? []).some(
            (a) => a.activityType?.name === 'keepLease',
          ),
        );
        const eventsAtFirst = (await handle.describe()).historyLength;
        // Its keeper renews every 400 ms: 15 renewals in 6 s, which the old renewals (6 events each)
        // would have made into a history the server asks to continue as new after 40 events.
        const until = Date.now() + 6_000;
        const deadlines = new Set<number>();
        while (Date.now() < until) {
          deadlines.add((await locks.inspect(key)).leaseUntil!);
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(deadlines.size).toBeGreaterThanOrEqual(10);
        expect((await handle.describe()).historyLength).toBe(eventsAtFirst);
        expect(await runsOf(session.workflowId)).toBe(1);
        await expectReleasedBy(env.client, session, lease, locks);
      });
    } finally {
      await locks.close();
    }
  }, 60_000);

  it('continues as new while backing off, carrying the attempt count and the budget, and still acquires', async () => {
    const locks = freshSqliteLockService();
    const key = unique('long-wait');
    const held = await locks.tryAcquire({ key, requester: 'long-job', ttlMs: 60_000 });
    if (!held.granted) throw new Error('setup');
    try {
      await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
        const budget = { baseBackoffMs: 50, maxBackoffMs: 100, maxRetries: 500, maxTotalWaitMs: 120_000 };
        const session = await startAcquisition(
          env.client,
          { key, requester: 'patient', fairness: 'no-starvation-guarantee', budget },
          { taskQueue },
        );
        await waitFor('a continued run', async () => (await runsOf(session.workflowId)) >= 2, 30_000);
        await locks.release(held.lease);
        await waitFor(
          'holding',
          async () => (await stateOf(env.client, session.workflowId)).phase === 'holding',
          30_000,
        );
        const state = await stateOf(env.client, session.workflowId);
        expect(BigInt(state.lease!.token)).toBeGreaterThan(BigInt(held.lease.token));
        // The latest run goes on counting: its first fast path is not attempt 1.
        const latest = await env.client.workflow.getHandle(session.workflowId).fetchHistory();
        const firstFastPath = activitySummaries(latest).find((s) => s.startsWith('fast path'));
        const firstAttempt = Number(/^fast path, attempt (\d+)$/.exec(firstFastPath ?? '')?.[1]);
        expect(firstAttempt).toBeGreaterThan(1);
        expect(state.attempts).toBeGreaterThanOrEqual(firstAttempt);
        await release(env.client, state.lease!);
      });
    } finally {
      await locks.close();
    }
  }, 60_000);

  it('never strands a caller: acquire() waiting across continue-as-new in the acquisition phase gets the lease', async () => {
    const locks = freshSqliteLockService();
    const key = unique('awaited');
    const held = await locks.tryAcquire({ key, requester: 'long-job', ttlMs: 60_000 });
    if (!held.granted) throw new Error('setup');
    try {
      await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
        // Without a place in the queue the waiter backs off and polls, so its history grows fast.
        const budget = { baseBackoffMs: 50, maxBackoffMs: 100, maxRetries: 500, maxTotalWaitMs: 120_000 };
        const request = { key, requester: 'caller', fairness: 'no-starvation-guarantee' as const, budget };
        const pending = acquire(env.client, request, { taskQueue });
        const workflowId = acquisitionWorkflowId(key, 'caller');
        await waitFor('two continued runs', async () => (await runsOf(workflowId)) >= 3, 40_000);
        await locks.release(held.lease);
        const { lease } = await pending;
        expect(lease).toMatchObject({ key, holder: 'caller' });
        expect(BigInt(lease.token)).toBeGreaterThan(BigInt(held.lease.token));
        expect(await release(env.client, lease)).toMatchObject({ ok: true });
      });
    } finally {
      await locks.close();
    }
  }, 60_000);

  it('takes over no lease from a run started with carried-over state: only a run its own run continued may', async () => {
    const locks = freshSqliteLockService();
    const key = unique('taken-over');
    try {
      await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
        // The input a holder's run once handed its next run, sent by a client as a fresh start.
        const granted = await locks.tryAcquire({ key, requester: 'job', ttlMs: 30_000 });
        if (!granted.granted) throw new Error('setup');
        const lease = granted.lease;
        const resume = { attempts: 1, elapsedBeforeMs: 0, lease, heldBeforeMs: 5_000 };
        const handle = await env.client.workflow.start('acquireLock', {
          taskQueue,
          workflowId: acquisitionWorkflowId(key, 'job'),
          args: [{ key, requester: 'job', ttlMs: 30_000, resume }],
        });
        await expect(handle.result()).rejects.toMatchObject({ cause: { type: 'InvalidLockRequest' } });
        // Nothing renewed the lease: it stands as the service granted it, to run out.
        expect(await locks.inspect(key)).toMatchObject({ holder: 'job', leaseUntil: lease.leaseUntil });
      });
    } finally {
      await locks.close();
    }
  }, 60_000);

  // Messages a hold refuses (a release without the release key) still grow its history: 40 of them
  // push it past the 40 events after which this server suggests a new run.
  async function floodWithRefusedReleases(workflowId: string, lease: { key: string; holder: string }) {
    const handle = env.client.workflow.getHandle(workflowId);
    for (let i = 0; i < 40; i++) {
      // A session the flood outlives (released meanwhile) takes no more signals: the flood stops.
      const sent = await handle.signal(requestRelease, lease, 'not-the-release-key').then(
        () => true,
        (error: unknown) => {
          if (error instanceof WorkflowNotFoundError) return false;
          throw error;
        },
      );
      if (!sent) return;
    }
  }

  it('continues a hold as new when messages grow its history: the same lease and token, still renewed, then released', async () => {
    const locks = freshSqliteLockService();
    const key = unique('hold-continued');
    try {
      await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
        const { lease, session } = await acquire(
          env.client,
          { key, requester: 'job', ttlMs: 1_200 },
          { taskQueue },
        );
        await floodWithRefusedReleases(session.workflowId, lease);
        await waitFor('a continued run', async () => (await runsOf(session.workflowId)) >= 2, 30_000);
        await waitFor(
          'holding again',
          async () => (await stateOf(env.client, session.workflowId)).phase === 'holding',
          30_000,
        );
        expect((await stateOf(env.client, session.workflowId)).lease).toMatchObject({ token: lease.token });
        // The next run's keeper renews: the deadline moves on well past the first lease's.
        const before = (await locks.inspect(key)).leaseUntil!;
        await new Promise((r) => setTimeout(r, 2_500));
        expect(await locks.inspect(key)).toMatchObject({ holder: 'job', token: lease.token });
        expect((await locks.inspect(key)).leaseUntil!).toBeGreaterThan(before + 1_000);
        await expectReleasedBy(env.client, session, lease, locks);
      });
    } finally {
      await locks.close();
    }
  }, 60_000);

  it('loses no release asked for by signal while a hold continues as new', async () => {
    const locks = freshSqliteLockService();
    const key = unique('hold-release-signal');
    try {
      await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
        const { lease, session, releaseKey } = await startAcquisition(
          env.client,
          { key, requester: 'job', ttlMs: 1_200 },
          { taskQueue },
        ).then(async (s) => ({
          ...(await awaitLeaseOrThrow(s.workflowId)),
          session: s,
          releaseKey: s.releaseKey,
        }));
        // The release, sent right behind the flood: it lands in the run that hands over, in the
        // handover, or in the next run, and is carried out in any case.
        const flood = floodWithRefusedReleases(session.workflowId, lease);
        await new Promise((r) => setTimeout(r, 150));
        await env.client.workflow
          .getHandle(session.workflowId)
          .signal(requestRelease, { key, holder: 'job' }, releaseKey);
        await flood;
        expect(await session.result()).toMatchObject({ status: 'released', lease: { token: lease.token } });
        expect((await locks.inspect(key)).holder).toBeNull();
      });
    } finally {
      await locks.close();
    }
  }, 60_000);

  async function awaitLeaseOrThrow(workflowId: string) {
    const news = await awaitLeaseOf(env.client, workflowId);
    if (news.status !== 'acquired') throw new Error(`expected a lease, the session ${news.status}`);
    return { lease: news.lease };
  }

  // The caller's release (following the session to its latest run), fenced, and the key free after.
  async function expectReleasedBy(
    client: typeof env.client,
    session: { result(): Promise<unknown> },
    lease: Lease,
    locks: LockService,
  ): Promise<void> {
    expect(await release(client, lease)).toMatchObject({ ok: true });
    expect(await session.result()).toMatchObject({ status: 'released', lease: { token: lease.token } });
    expect((await locks.inspect(lease.key)).holder).toBeNull();
  }

  async function runsOf(workflowId: string): Promise<number> {
    let runs = 0;
    for await (const _ of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs++;
    return runs;
  }
});
