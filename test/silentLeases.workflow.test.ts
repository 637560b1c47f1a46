import { Worker } from '@temporalio/worker';
import { acquire, acquisitionWorkflowId, startAcquisition, stateOf } from '../client/lockwardenClient';
import { sessionState } from '../temporal/messages';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';
import { createMetrics } from '../activities/metrics';
import { createSessionWaker } from '../activities/sessionSignals';
import { SILENT_LEASE_FRACTION } from '../policy/decisions/leaseKeeping';
import { renewSilentLeases } from '../worker/silentLeases';
import { sessionFixture, silentLog, unique, withWorker, workflowBundle } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// The sweep's other half (worker/silentLeases.ts): a lease whose keeper fell silent is renewed for
// the session that holds it, and for nobody else. The keeper here falls silent the gentle way: its
// worker shuts down and no other serves the task queue, so Temporal has nowhere to run it again.
// test/workerKill.test.ts does the same with a worker killed outright.
describe('the sweep and a silent keeper', () => {
  const fixture = sessionFixture();

  it("renews the lease of a session that still holds it, and neither a waiter's nor an outsider's", async () => {
    const { client } = fixture.env;
    const { locks } = fixture;
    const [key, outsiderKey] = [unique('silent'), unique('outsider')];
    const waker = createSessionWaker(client, silentLog);
    const metrics = createMetrics();
    const sweep = () => renewSilentLeases({ locks, log: silentLog, waker, metrics });
    // Long enough for the unanswered query below (3 s) to leave the lease alive.
    const ttlMs = 9_000;
    const { holder, waiter, taskQueue } = await withWorker(
      fixture.env,
      { locks, log: silentLog },
      async (taskQueue) => {
        const held = await acquire(client, { key, requester: 'holder', ttlMs }, { taskQueue });
        const queued = await startAcquisition(client, { key, requester: 'waiter' }, { taskQueue });
        await waitFor(
          'the waiter parked',
          async () => (await stateOf(client, queued.workflowId)).phase === 'queued',
        );
        return { holder: held, waiter: queued, taskQueue };
      },
    );
    const token = (await locks.inspect(key)).token!;
    // No worker answers for the session: it is not proven to hold, and its lease is left to run out.
    expect(await waker.holds(key, 'holder', token)).toBe(false);
    // A worker that runs the workflows but not the keeper: the keeper stays silent, queries answer.
    const answering = await Worker.create({
      connection: fixture.env.nativeConnection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: {},
    });
    await answering
      .runUntil(async () => {
        // The worker is gone: the keeper renews no more, and the session still holds.
        expect(await waker.holds(key, 'holder', token)).toBe(true);
        expect(await waker.holds(key, 'holder', String(BigInt(token) + 1n))).toBe(false);
        expect(await waker.holds(key, 'waiter', token)).toBe(false);
        expect(await waker.holds(key, 'nobody', token)).toBe(false);
        await locks.tryAcquire({ key: outsiderKey, requester: 'outsider', ttlMs });

        const runningLow = async () =>
          (await locks.leasesRunningLow(SILENT_LEASE_FRACTION)).map((l) => l.key).sort();
        await waitFor('both leases running low', async () => (await runningLow()).length === 2, ttlMs);
        const before = await locks.inspect(key);
        expect((await sweep()).renewed).toBe(1);
        const after = await locks.inspect(key);
        expect(after).toMatchObject({ holder: 'holder', token: before.token });
        expect(after.leaseUntil).toBeGreaterThan(before.leaseUntil!);
        expect(await runningLow()).toEqual([outsiderKey]);

        // The sweep keeps renewing it for as long as the keeper is silent; the outsider's runs out.
        await waitFor('the lease running low again', async () => (await runningLow()).includes(key), ttlMs);
        expect((await sweep()).renewed).toBe(1);
        await waitFor(
          'the outsider lease run out',
          async () => (await locks.inspect(outsiderKey)).holder === null,
          ttlMs,
        );
        expect(await locks.inspect(key)).toMatchObject({ holder: 'holder', token: before.token });
        expect((await locks.inspect(key)).waiters).toEqual(['waiter']);
        const counted = await metrics.registry.getSingleMetricAsString(
          'lockwarden_silent_lease_renewals_total',
        );
        expect(counted).toContain('lockwarden_silent_lease_renewals_total{result="ok"} 2');
      })
      .finally(async () => {
        for (const id of [holder.session.workflowId, waiter.workflowId])
          await client.workflow.getHandle(id).terminate('test over');
      });
  });

  it('renews nothing for a workflow of another type under a session id that sets LockState to holding', async () => {
    const { client } = fixture.env;
    const { locks } = fixture;
    const key = unique('impostor');
    const waker = createSessionWaker(client, silentLog);
    await locks.tryAcquire({ key, requester: 'holder', ttlMs: 60_000 });
    const token = (await locks.inspect(key)).token!;
    // Any client of the namespace can start any workflow under a session's id, with any search
    // attribute, and have it answer the state query as a holding session would.
    const taskQueue = unique('impostor');
    const worker = await Worker.create({
      connection: fixture.env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./support/userWorkflows'),
      activities: { exportBatch: async () => 'unused' },
    });
    await worker.runUntil(async () => {
      const impostor = await client.workflow.start('impostorSession', {
        taskQueue,
        workflowId: acquisitionWorkflowId(key, 'holder'),
        args: [token],
        typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.lockState, value: 'holding' }],
      });
      try {
        expect(await impostor.query(sessionState)).toMatchObject({ phase: 'holding', lease: { token } });
        expect(await waker.holds(key, 'holder', token)).toBe(false);
      } finally {
        await impostor.terminate('test over');
      }
    });
  });
});
