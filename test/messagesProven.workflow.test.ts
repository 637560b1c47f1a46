// What one client of the namespace can do with a message, tried: tokens come only from the lock
// service, only the holder lets go, and every message is checked before anything acts on it.
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  acquire,
  acquisitionWorkflowId,
  forceRelease,
  release,
  startAcquisition,
  stateOf,
} from '../client/lockwardenClient';
import pino from 'pino';
import { createMetrics } from '../activities/metrics';
import { FAILURE_TYPES, InvalidLockRequestError, LeaseActionDeniedError } from '../policy/errors';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { releaseKeyDigest } from '../policy/lockContract/releaseKey';
import {
  deadlockFound,
  fairnessViolated,
  lockReleased,
  lockSessionUpdate,
  releaseLease,
  requestRelease,
} from '../temporal/messages';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

const FORGED_TOKEN = '9223372036854775807';

describe('messages are claims: sessions and withLock prove them before they act', () => {
  const fixture = sessionFixture();
  const phaseOf = async (workflowId: string) => (await stateOf(fixture.env.client, workflowId)).phase;
  const failedTasks = async (workflowId: string) => {
    const history = await fixture.env.client.workflow.getHandle(workflowId).fetchHistory();
    const failed = temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;
    return (history.events ?? []).filter((e) => e.eventType === failed).length;
  };

  it('withLock runs its job only with the lease the lock service shows, never a token from a forged notice', async () => {
    const { client } = fixture.env;
    const key = unique('forged-notice');
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const other = await acquire(client, { key, requester: 'other' }, { taskQueue });
      const job = await client.workflow.start<(r: object, ms: number) => Promise<Lease>>('holdLockFor', {
        taskQueue,
        workflowId: unique('job'),
        args: [{ key, requester: 'job' }, 100],
      });
      const sessionId = acquisitionWorkflowId(key, 'job');
      await waitFor('the job queued', async () => (await phaseOf(sessionId).catch(() => '')) === 'queued');
      // Anyone can signal the parent; the session id is public.
      const lease = {
        key,
        holder: 'job',
        token: FORGED_TOKEN,
        leaseUntil: Date.now() + 60_000,
        grantedAt: 0,
      };
      await job.signal(lockSessionUpdate, sessionId, { status: 'acquired', lease });
      await job.signal(lockSessionUpdate, sessionId, { status: 'acquired', lease: null as never });
      for (const junk of [null, {}, 'x', 42, { status: 'x'.repeat(200_000) }])
        await job.signal(lockSessionUpdate, sessionId, junk as never);
      await job.signal(lockSessionUpdate, null as never, null as never);
      await new Promise((r) => setTimeout(r, 1_500));
      expect((await job.describe()).status.name).toBe('RUNNING');
      expect(await failedTasks(job.workflowId)).toBe(0);
      expect(await phaseOf(sessionId)).toBe('queued');
      await release(client, other.lease);
      const held = await job.result();
      expect(held.token).toBe(String(BigInt(other.lease.token) + 1n));
      expect((await fixture.locks.inspect(key)).lastToken).toBe(held.token);
    });
  });

  it('refuses a session started with carried-over state: no lease is taken over by request', async () => {
    const { client } = fixture.env;
    const [key, otherKey] = [unique('thief'), unique('victim-key')];
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const carried = {
        key: otherKey,
        holder: 'thief',
        token: '424242',
        leaseUntil: Date.now() + 60_000,
        grantedAt: 0,
      };
      const started = client.workflow.execute('acquireLock', {
        taskQueue,
        workflowId: acquisitionWorkflowId(key, 'thief'),
        args: [
          {
            key,
            requester: 'thief',
            resume: { attempts: 0, elapsedBeforeMs: 0, lease: carried, heldBeforeMs: 0 },
          },
        ],
      });
      const failure = await started.catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      expect((failure as WorkflowFailedError).cause).toMatchObject({
        type: FAILURE_TYPES.invalidLockRequest,
      });
      expect((await fixture.locks.inspect(key)).holder).toBeNull();
      expect((await fixture.locks.inspect(otherKey)).holder).toBeNull();
    });
  });

  it('only the holder lets go: a release by name or with another key is refused with LeaseActionDenied', async () => {
    const { client } = fixture.env;
    const key = unique('by-name');
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      // Started as another process would: this process never saw its release key.
      const theirKey = 'k'.repeat(43);
      const victim = acquisitionWorkflowId(key, 'victim');
      await client.workflow.start('acquireLock', {
        taskQueue,
        workflowId: victim,
        args: [{ key, requester: 'victim', releaseKeyDigest: releaseKeyDigest(theirKey) }],
      });
      await waitFor('the victim holding', async () => (await phaseOf(victim).catch(() => '')) === 'holding');
      await expect(release(client, { key, holder: 'victim' })).rejects.toThrow(LeaseActionDeniedError);
      await expect(
        release(client, { key, holder: 'victim' }, { releaseKey: 'x'.repeat(43) }),
      ).rejects.toThrow(/not the release key of this lease/);
      const handle = client.workflow.getHandle(victim);
      const bare = await handle
        .executeUpdate(releaseLease, { args: [{ key, holder: 'victim' }, undefined] })
        .catch((error: unknown) => error);
      expect(bare).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((bare as WorkflowUpdateFailedError).cause).toMatchObject({
        type: FAILURE_TYPES.leaseActionDenied,
      });
      await handle.signal(requestRelease, { key, holder: 'victim' }, 'y'.repeat(43));
      expect(await phaseOf(victim)).toBe('holding');
      expect((await fixture.locks.inspect(key)).holder).toBe('victim');
      expect(await release(client, { key, holder: 'victim' }, { releaseKey: theirKey })).toMatchObject({
        ok: true,
      });
    });
  });

  it('refuses and counts malformed signals and updates, and never fails a workflow task over them', async () => {
    const { client } = fixture.env;
    const key = unique('malformed');
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const held = await acquire(client, { key, requester: 'holder' }, { taskQueue });
      const waiter = await startAcquisition(client, { key, requester: 'waiter' }, { taskQueue });
      await waitFor('the waiter queued', async () => (await phaseOf(waiter.workflowId)) === 'queued');
      const huge = 'x'.repeat(200_000);
      for (const id of [held.session.workflowId, waiter.workflowId]) {
        const handle = client.workflow.getHandle(id);
        for (const payload of [{}, null, 42, huge, { cycle: huge, escalator: huge }])
          await handle.signal(deadlockFound, payload as never);
        for (const payload of [{}, null, 'late', { key, waiter: 'waiter', waiterSince: 'x' }])
          await handle.signal(fairnessViolated, payload as never);
        for (const payload of [null, {}, { key, holder: huge }])
          await handle.signal(requestRelease, payload as never, huge);
        await handle.signal(lockReleased, 'not a notice' as never);
        for (const payload of [null, {}, { key: 7 }, { key, holder: huge }])
          await expect(
            handle.executeUpdate(releaseLease, { args: [payload as never, huge] }),
          ).rejects.toThrow(WorkflowUpdateFailedError);
      }
      await waitFor('every signal refused', async () => {
        const states = await Promise.all(
          [held.session.workflowId, waiter.workflowId].map((id) => stateOf(client, id)),
        );
        return states.every((s) => s.refusedMessages >= 13);
      });
      expect(await phaseOf(held.session.workflowId)).toBe('holding');
      expect(await phaseOf(waiter.workflowId)).toBe('queued');
      expect(await failedTasks(held.session.workflowId)).toBe(0);
      expect(await failedTasks(waiter.workflowId)).toBe(0);
      await release(client, held.lease);
      await waitFor('the waiter holding', async () => (await phaseOf(waiter.workflowId)) === 'holding');
      await release(client, { key, holder: 'waiter' });
    });
  });

  it('acts on a deadlock notice only when the lock service shows the cycle, and on a wake-up without spending a retry', async () => {
    const { client } = fixture.env;
    const key = unique('claims');
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const held = await acquire(client, { key, requester: 'holder' }, { taskQueue });
      const waiter = await startAcquisition(
        client,
        { key, requester: 'waiter', owner: 'job-w', budget: { maxRetries: 5 } },
        { taskQueue },
      );
      await waitFor('the waiter queued', async () => (await phaseOf(waiter.workflowId)) === 'queued');
      const handle = client.workflow.getHandle(waiter.workflowId);
      // Well formed, and false: nobody waits for anything job-w holds.
      const edges = [
        { waiter: 'job-w', key, holder: 'holder' },
        { waiter: 'holder', key: 'elsewhere', holder: 'job-w' },
      ];
      await handle.signal(deadlockFound, { cycle: 'a made-up cycle', escalator: 'nobody', edges });
      // Well formed, about this waiter, and false: nobody was put ahead of it.
      const overtaking = { key, waiter: 'waiter', waiterSince: 1, overtakenBy: 'holder', overtakerSince: 2 };
      await handle.signal(fairnessViolated, overtaking);
      // Twenty-five release notices from anyone, apart (as the probe sent them), while the holder holds.
      for (let i = 0; i < 25; i++) {
        await handle.signal(lockReleased, { releasedAt: Date.now() });
        await new Promise((r) => setTimeout(r, 150));
      }
      await waitFor(
        'the claims refused',
        async () => (await stateOf(client, waiter.workflowId)).refusedMessages >= 10,
      );
      const state = await stateOf(client, waiter.workflowId);
      expect(state.phase).toBe('queued');
      expect(state.attempts).toBeLessThanOrEqual(2);
      expect(state.budgetLeft.retries).toBeGreaterThanOrEqual(4);
      expect(state.escalation).toBeNull();
      await release(client, held.lease);
      await waitFor('the waiter holding', async () => (await phaseOf(waiter.workflowId)) === 'holding');
      await release(client, { key, holder: 'waiter' });
      expect(await handle.result()).toMatchObject({ status: 'released' });
    });
  });

  it("takes a lease from its holder only by an operator's force-release, which says why and is counted", async () => {
    const { client } = fixture.env;
    const key = unique('forced');
    const metrics = createMetrics();
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    await withWorker(fixture.env, { locks: fixture.locks, log, metrics }, async (taskQueue) => {
      const held = await acquire(client, { key, requester: 'stuck' }, { taskQueue });
      await expect(forceRelease(client, held.lease, { reason: ' ' }, { taskQueue })).rejects.toThrow(
        InvalidLockRequestError,
      );
      await expect(
        forceRelease(client, held.lease, undefined as unknown as { reason: string }, { taskQueue }),
      ).rejects.toThrow(/reason: must say why/);
      const taken = await forceRelease(client, held.lease, { reason: 'the job is wedged' }, { taskQueue });
      expect(taken).toMatchObject({ ok: true });
      expect(lines).toContainEqual(
        expect.objectContaining({ event: 'lock.force-release', key, reason: 'the job is wedged', ok: true }),
      );
      expect(await metrics.registry.getSingleMetricAsString('lockwarden_force_releases_total')).toContain(
        'lockwarden_force_releases_total{result="ok"} 1',
      );
      await expect(held.session.result()).resolves.toMatchObject({ status: 'lease-lost' });
    });
  });

  it('fails a workflow started with bad input with a typed failure, never a task that retries', async () => {
    const { client } = fixture.env;
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const cases: [string, unknown[]][] = [
        ['releaseLock', [null]],
        ['releaseLock', [{ key: 'k', holder: 'h', token: '99999999999999999999' }]],
        ['holdLockFor', [null, 100]],
        ['holdLockFor', [{ key: 'k', requester: 'r' }, -1]],
        ['postmortemBriefing', [{}]],
        ['lockStatus', [{}]],
        ['acquireLock', [null]],
        ['acquireLock', [{ key: 'k'.repeat(300), requester: 'r' }]],
      ];
      for (const [workflowType, args] of cases) {
        const failure = await client.workflow
          .execute(workflowType, {
            taskQueue,
            workflowId: unique(workflowType),
            args,
            workflowExecutionTimeout: '20s',
          })
          .catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(WorkflowFailedError);
        const cause = (failure as WorkflowFailedError).cause;
        expect(cause).toBeInstanceOf(ApplicationFailure);
        expect([workflowType, (cause as ApplicationFailure).type]).toEqual([
          workflowType,
          FAILURE_TYPES.invalidLockRequest,
        ]);
      }
    });
  });
});
