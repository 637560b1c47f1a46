// The Temporal CLI's operator commands on lock sessions, run as an operator runs them, and what each
// does to the key's queue: a lease never outlives its holder, and a waiter that is gone blocks no one.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { createMetrics } from '../activities/metrics';
import { activitySummaries } from '../devkit/history';
import { acquire, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import { acquisitionWorkflowId } from '../policy/constants';
import type { SessionOutcome } from '../policy/sessionModel/sessionTypes';
import { sessionFixture, silentLog, temporalCli, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

/**
 * A TTL short enough to run quickly and long enough to tell a lease let go from one run out: renewals
 * every 3.3 s, a keeper from 1.7 s into the hold, and 6.7 s at least left on the lease when its
 * holder ends. Long enough, too, for the sweep to stand in for a silent keeper, so the keeper's
 * heartbeats are a minute apart: what tells it its session ended is the worker's watch on sessions.
 */
const TTL_MS = 10_000;

describe('Temporal CLI operator commands on lock sessions', () => {
  const fixture = sessionFixture();

  /** Runs `fn` with a worker, its metrics, and helpers for the key's sessions. */
  function withSessions(fn: (ctx: Sessions) => Promise<void>) {
    const metrics = createMetrics();
    return withWorker(fixture.env, { locks: fixture.locks, log: silentLog, metrics }, (taskQueue) =>
      fn(new Sessions(taskQueue, metrics)),
    );
  }

  class Sessions {
    readonly key = unique('ops');
    constructor(
      readonly taskQueue: string,
      readonly metrics: ReturnType<typeof createMetrics>,
    ) {}

    id(requester: string): string {
      return acquisitionWorkflowId(this.key, requester);
    }

    /**
     * A holder kept by its keeper (started half a renewal interval into the hold), past its first
     * renewal and first heartbeat (the next is a minute away).
     */
    async holder(requester = 'holder') {
      const held = await acquire(
        fixture.env.client,
        { key: this.key, requester, ttlMs: TTL_MS },
        { taskQueue: this.taskQueue },
      );
      await waitFor('the keeper running', async () => {
        const described = await fixture.env.client.workflow.getHandle(this.id(requester)).describe();
        return (described.raw.pendingActivities ?? []).some((a) => a.activityType?.name === 'keepLease');
      });
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      return held;
    }

    /** A waiter parked in the key's queue. */
    async waiter(requester: string) {
      const session = await startAcquisition(
        fixture.env.client,
        { key: this.key, requester, ttlMs: TTL_MS },
        { taskQueue: this.taskQueue },
      );
      await waitFor(
        `${requester} queued`,
        async () => (await stateOf(fixture.env.client, session.workflowId)).phase === 'queued',
      );
      return session;
    }

    async holding(requester: string): Promise<void> {
      await waitFor(
        `${requester} holding`,
        async () => (await stateOf(fixture.env.client, this.id(requester))).phase === 'holding',
        30_000,
      );
    }

    inspect() {
      return fixture.locks.inspect(this.key);
    }

    async orphanedReleases(): Promise<string> {
      return (
        fixture.locks &&
        (await this.metrics.registry.getSingleMetricAsString('lockwarden_orphaned_releases_total'))
      );
    }
  }

  async function outcomeOf(workflowId: string): Promise<SessionOutcome> {
    return fixture.env.client.workflow.getHandle(workflowId).result();
  }

  it('terminate a holder: its keeper releases the lease, fenced, within one watch of its worker (1 to 5 s), and the next waiter holds before the lease would have run out', async () => {
    await withSessions(async (s) => {
      const { lease } = await s.holder();
      await s.waiter('next');
      temporalCli('workflow', 'terminate', '--workflow-id', s.id('holder'), '--reason', 'operator test');
      const { leaseUntil } = await s.inspect();
      await s.holding('next');
      const after = await s.inspect();
      expect(after).toMatchObject({ holder: 'next', waiters: [] });
      expect(BigInt(after.token!)).toBeGreaterThan(BigInt(lease.token));
      // Let go, not run out: the grant came while the terminated holder's lease still stood.
      expect((await stateOf(fixture.env.client, s.id('next'))).lease!.grantedAt).toBeLessThan(leaseUntil!);
      expect(await s.orphanedReleases()).toContain('lockwarden_orphaned_releases_total{result="ok"} 1');
    });
  });

  it('terminate a waiter: it keeps its place until the key changes hands, and the hand-off skips it to the next living waiter', async () => {
    await withSessions(async (s) => {
      const { lease, session } = await s.holder();
      await s.waiter('gone');
      await s.waiter('next');
      temporalCli('workflow', 'terminate', '--workflow-id', s.id('gone'), '--reason', 'operator test');
      expect((await s.inspect()).waiters).toEqual(['gone', 'next']);
      expect(await release(fixture.env.client, lease, { releaseKey: session.releaseKey })).toMatchObject({
        ok: true,
      });
      await s.holding('next');
      expect(await s.inspect()).toMatchObject({ holder: 'next', waiters: [] });
    });
  });

  it('cancel a holder: it releases, fenced, and ends cancelled; the next waiter holds at once', async () => {
    await withSessions(async (s) => {
      const { lease } = await s.holder();
      await s.waiter('next');
      temporalCli('workflow', 'cancel', '--workflow-id', s.id('holder'));
      const { leaseUntil } = await s.inspect();
      const ended = await outcomeOf(s.id('holder')).catch((error: unknown) => error);
      expect(ended).toBeInstanceOf(WorkflowFailedError);
      expect(String((ended as WorkflowFailedError).cause)).toMatch(/cancel/i);
      await s.holding('next');
      expect((await stateOf(fixture.env.client, s.id('next'))).lease!.grantedAt).toBeLessThan(leaseUntil!);
      // The session released its own lease (fenced by its token), not its keeper.
      expect(await s.orphanedReleases()).not.toContain('result="ok"');
      const history = await fixture.env.client.workflow.getHandle(s.id('holder')).fetchHistory();
      expect(activitySummaries(history)).toContain(`release token ${lease.token}`);
    });
  });

  it('cancel a waiter: it leaves the queue at once, and the key goes to the one behind it', async () => {
    await withSessions(async (s) => {
      const { lease, session } = await s.holder();
      await s.waiter('cancelled');
      await s.waiter('next');
      temporalCli('workflow', 'cancel', '--workflow-id', s.id('cancelled'));
      await waitFor(
        'the cancelled waiter out of the queue',
        async () => !(await s.inspect()).waiters.includes('cancelled'),
      );
      expect((await s.inspect()).waiters).toEqual(['next']);
      await release(fixture.env.client, lease, { releaseKey: session.releaseKey });
      await s.holding('next');
    });
  });

  it('reset a holder to its first workflow task: the new run holds the same lease, no token is issued twice, and its release hands the key on', async () => {
    await withSessions(async (s) => {
      const { lease, session } = await s.holder();
      await s.waiter('next');
      temporalCli(
        'workflow',
        'reset',
        '--workflow-id',
        s.id('holder'),
        '--type',
        'FirstWorkflowTask',
        '--reason',
        'operator test',
      );
      await waitFor('a new run holding', async () => {
        const described = await fixture.env.client.workflow.getHandle(s.id('holder')).describe();
        return (
          described.runId !== session.runId &&
          (await stateOf(fixture.env.client, s.id('holder'))).phase === 'holding'
        );
      });
      // The old run's keeper stops; the new run's keeps the same lease: no second lease, same token.
      await new Promise((resolve) => setTimeout(resolve, 2 * TTL_MS));
      expect(await s.inspect()).toMatchObject({ holder: 'holder', token: lease.token, waiters: ['next'] });
      expect((await stateOf(fixture.env.client, s.id('holder'))).lease?.token).toBe(lease.token);
      expect(await s.orphanedReleases()).not.toContain('result="ok"');
      expect(await release(fixture.env.client, lease, { releaseKey: session.releaseKey })).toMatchObject({
        ok: true,
      });
      await s.holding('next');
      expect(BigInt((await s.inspect()).token!)).toBe(BigInt(lease.token) + 1n);
    });
  }, 60_000);

  it("batch terminate of a key's sessions (terminate --query): the key is free and its queue empty before the lease would have run out", async () => {
    await withSessions(async (s) => {
      await s.holder();
      await s.waiter('w1');
      await s.waiter('w2');
      temporalCli(
        'workflow',
        'terminate',
        '--query',
        `LockKey = '${s.key}' AND ExecutionStatus = 'Running'`,
        '--reason',
        'operator test',
        '--yes',
      );
      const { leaseUntil } = await s.inspect();
      await waitFor('the key free', async () => (await s.inspect()).holder === null, 30_000);
      const freed = await s.inspect();
      expect(freed.serviceTime).toBeLessThan(leaseUntil!);
      await waitFor('the queue empty', async () => (await s.inspect()).waiters.length === 0, 10_000);
    });
  }, 60_000);
});

describe('holder liveness', () => {
  const fixture = sessionFixture();

  it('a client process killed while it holds: its session lets the lease go, fenced, once its keep-alives stop, and says why', async () => {
    const metrics = createMetrics();
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog, metrics }, async (taskQueue) => {
      const key = unique('killed-client');
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          path.join(__dirname, '..', 'devkit', 'holdFromProcess.ts'),
          key,
          'service',
          taskQueue,
          '3000',
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const printed = await new Promise<string>((done) =>
        child.stdout!.once('data', (b: Buffer) => done(b.toString())),
      );
      const lease = JSON.parse(printed) as { token: string };
      const waiter = await startAcquisition(fixture.env.client, { key, requester: 'next' }, { taskQueue });
      // Alive, the holder keeps it past its holder TTL.
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      expect(await fixture.locks.inspect(key)).toMatchObject({ holder: 'service', token: lease.token });
      child.kill('SIGKILL');
      const { leaseUntil } = await fixture.locks.inspect(key);
      const outcome = await fixture.env.client.workflow
        .getHandle(acquisitionWorkflowId(key, 'service'))
        .result();
      expect(outcome).toMatchObject({ status: 'lease-lost' });
      expect((outcome as { reason: string }).reason).toMatch(
        new RegExp(`^no keep-alive from the holder within 3000 ms: released token ${lease.token}, fenced$`),
      );
      await waitFor(
        'the waiter holding',
        async () => (await stateOf(fixture.env.client, waiter.workflowId)).phase === 'holding',
      );
      expect((await stateOf(fixture.env.client, waiter.workflowId)).lease!.grantedAt).toBeLessThan(
        leaseUntil!,
      );
      expect(await metrics.registry.getSingleMetricAsString('lockwarden_leases_lost_total')).toContain(
        'at="holder-gone"} 1',
      );
    });
  }, 60_000);

  it('the hold limit: the session lets go, fenced, and the holder learns it through its signal (LeaseLost, with why)', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const key = unique('limited');
      // Past the keeper's start (half of a 1 s renewal interval): the hold's one timer ends it.
      const held = await acquire(
        fixture.env.client,
        { key, requester: 'long-job', ttlMs: 3_000, maxHoldMs: 2_500 },
        { taskQueue },
      );
      const lost = await new Promise<Error>((done) =>
        held.signal.addEventListener('abort', () => done(held.signal.reason as Error), { once: true }),
      );
      expect(lost.name).toBe('LeaseLost');
      const outcome = await fixture.env.client.workflow.getHandle(held.session.workflowId).result();
      expect(outcome).toMatchObject({ status: 'lease-lost' });
      expect((outcome as { reason: string }).reason).toMatch(
        /^the hold limit of 2500 ms was reached: released token \d+, fenced$/,
      );
      expect(await fixture.locks.inspect(key)).toMatchObject({ holder: null });
    });
  }, 30_000);

  it("withLock: a job past the request's hold limit is stopped and its workflow fails with LeaseLost", async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const key = unique('withlock-limit');
      const failed = await fixture.env.client.workflow
        .execute('holdLockFor', {
          taskQueue,
          workflowId: unique('job'),
          args: [{ key, requester: 'job', maxHoldMs: 2_000 }, 60_000],
        })
        .catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(WorkflowFailedError);
      const cause = (failed as WorkflowFailedError).cause as { type?: string; message: string };
      expect(cause.type).toBe('LeaseLost');
      expect(cause.message).toMatch(/hold limit of 2000 ms/);
    });
  }, 30_000);

  it('a withLock parent terminated while it holds: its session ends with it, and the lease is let go at once', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const key = unique('parent');
      const parent = await fixture.env.client.workflow.start('holdLockFor', {
        taskQueue,
        workflowId: unique('job'),
        args: [{ key, requester: 'job', ttlMs: TTL_MS }, 600_000],
      });
      const session = acquisitionWorkflowId(key, 'job');
      await waitFor('the keeper running', async () => {
        const described = await fixture.env.client.workflow
          .getHandle(session)
          .describe()
          .catch(() => null);
        return (described?.raw.pendingActivities ?? []).some((a) => a.activityType?.name === 'keepLease');
      });
      await parent.terminate('operator test');
      const { leaseUntil } = await fixture.locks.inspect(key);
      await waitFor('the key free', async () => (await fixture.locks.inspect(key)).holder === null, 30_000);
      expect((await fixture.locks.inspect(key)).serviceTime).toBeLessThan(leaseUntil!);
    });
  }, 30_000);

  it("refuses a hold limit above the worker's maximum, naming the setting that allows more", async () => {
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, holdLimits: { maxHoldMs: 60_000, maxHolderTtlMs: 10_000 } },
      async (taskQueue) => {
        const session = await startAcquisition(
          fixture.env.client,
          { key: unique('too-long'), requester: 'r', maxHoldMs: 120_000, holderTtlMs: 20_000 },
          { taskQueue },
        );
        const failed = await session.result().catch((error: unknown) => error);
        const message = String((failed as WorkflowFailedError).cause?.message);
        expect(message).toMatch(
          /maxHoldMs: 120000 is above this worker's maximum of 60000 ms \(LOCKWARDEN_MAX_HOLD_MS\)/,
        );
        expect(message).toMatch(
          /holderTtlMs: 20000 is above this worker's maximum of 10000 ms \(LOCKWARDEN_MAX_HOLDER_TTL_MS\)/,
        );
      },
    );
  });
});
