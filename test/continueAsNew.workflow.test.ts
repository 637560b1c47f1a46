import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  acquire,
  acquisitionWorkflowId,
  release,
  startAcquisition,
  stateOf,
} from '../client/lockwardenClient';
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

  it('continues as new while holding when the server suggests it, keeping the lease, its token and the renewals', async () => {
    const locks = freshSqliteLockService();
    const key = unique('long-hold');
    try {
      await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
        const { lease, session } = await acquire(
          env.client,
          { key, requester: 'long-job', ttlMs: 1_200 },
          { taskQueue },
        );
        // Renewing every 400 ms adds events fast; wait for a second run of the same workflow id.
        await waitFor(
          'a continued run',
          async () => {
            let runs = 0;
            for await (const _ of env.client.workflow.list({ query: `WorkflowId = '${session.workflowId}'` }))
              runs++;
            return runs >= 2;
          },
          30_000,
        );
        const state = await stateOf(env.client, session.workflowId);
        expect(state).toMatchObject({ phase: 'holding', lease: { token: lease.token }, attempts: 1 });
        expect((await locks.inspect(key)).token).toBe(lease.token);
        expect(await release(env.client, lease)).toMatchObject({ ok: true });
        const latest = await env.client.workflow.getHandle(session.workflowId).result();
        expect(latest).toMatchObject({ status: 'released', lease: { token: lease.token } });
        expect((await locks.inspect(key)).holder).toBeNull();
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
        const firstAttempt = Number(
          /^fast path, attempt (\d+)$/.exec(activitySummaries(latest)[0] ?? '')?.[1],
        );
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

  it('never strands a caller: release() sent while holders keep continuing as new is answered, and releases', async () => {
    const locks = freshSqliteLockService();
    try {
      await withWorker(env, { locks, log: silentLog }, async (taskQueue) => {
        // Three holders renewing every 400 ms continue as new every few seconds; each is released at
        // a different moment of its run, the last one just as a new run has started.
        const held = await Promise.all(
          [0, 1, 2].map((i) =>
            acquire(
              env.client,
              { key: unique('hold-across'), requester: `job-${i}`, ttlMs: 1_200 },
              { taskQueue },
            ),
          ),
        );
        const released = await Promise.all(
          held.map(async ({ lease, session }, i) => {
            const runs = 2 + i;
            await waitFor(
              `run ${runs} of ${lease.holder}`,
              async () => (await runsOf(session.workflowId)) >= runs,
              40_000,
            );
            await new Promise((r) => setTimeout(r, [250, 100, 0][i]));
            const answer = await release(env.client, lease);
            return {
              answer,
              outcome: await session.result(),
              holderAfter: (await locks.inspect(lease.key)).holder,
            };
          }),
        );
        for (const [i, r] of released.entries()) {
          expect(r.answer).toMatchObject({ ok: true });
          expect(r.outcome).toMatchObject({ status: 'released', lease: { token: held[i]!.lease.token } });
          expect(r.holderAfter).toBeNull();
        }
      });
    } finally {
      await locks.close();
    }
  }, 90_000);

  async function runsOf(workflowId: string): Promise<number> {
    let runs = 0;
    for await (const _ of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs++;
    return runs;
  }
});
