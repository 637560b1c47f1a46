import { acquire, release, resolve, startAcquisition, stateOf } from '../client/lockwardenClient';
import { SqliteLockService } from '../locks/sqliteLockService';
import { sessionFixture } from './support/temporalFixture';
import { startWorkerProcess, stopWorkerProcess } from './support/workerProcess';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';

describe('a worker killed with SIGKILL mid-flight', () => {
  const fixture = sessionFixture();

  it('loses and duplicates no session: holds, sleeps and escalations all complete on a new worker, never two holders', async () => {
    const lockFile = freshSqlitePath();
    const escalations = lockFile.replace(/\.sqlite$/, '.jsonl');
    const taskQueue = unique('kill');
    const [held, escalatedKey] = [unique('held'), unique('escalated')];
    const locks = new SqliteLockService({ path: lockFile });
    let worker = startWorkerProcess(lockFile, taskQueue, { LOCKWARDEN_ESCALATIONS_FILE: escalations });
    try {
      // A session holding a lease (renewing), one backing off behind it, one waiting for an operator.
      const holder = await acquire(
        fixture.env.client,
        { key: held, requester: 'holder', ttlMs: 30_000 },
        { taskQueue },
      );
      const sleeper = await startAcquisition(
        fixture.env.client,
        {
          key: held,
          requester: 'sleeper',
          budget: { baseBackoffMs: 500, maxBackoffMs: 1_000, maxRetries: 1_000, maxTotalWaitMs: 600_000 },
        },
        { taskQueue },
      );
      await locks.tryAcquire({ key: escalatedKey, requester: 'stuck-job', ttlMs: 60_000 });
      const escalated = await startAcquisition(
        fixture.env.client,
        { key: escalatedKey, requester: 'pager', budget: { maxRetries: 0 } },
        { taskQueue },
      );
      await waitFor(
        'the sleeper parked in the queue',
        async () => (await stateOf(fixture.env.client, sleeper.workflowId)).phase === 'queued',
        30_000,
      );
      await waitFor(
        'the escalation waiting',
        async () => (await stateOf(fixture.env.client, escalated.workflowId)).phase === 'escalated',
        30_000,
      );

      // The holder's keeper has started (half a renewal interval into the hold): the kill takes it.
      await waitFor(
        "the holder's keeper running",
        async () => {
          const described = await fixture.env.client.workflow.getHandle(holder.session.workflowId).describe();
          return (described.raw.pendingActivities ?? []).some((a) => a.activityType?.name === 'keepLease');
        },
        30_000,
      );
      await stopWorkerProcess(worker, 'SIGKILL');
      const atKill = await locks.inspect(held);
      worker = startWorkerProcess(lockFile, taskQueue, { LOCKWARDEN_ESCALATIONS_FILE: escalations });

      // The new worker keeps the hold: it renews the lease, with the same token, before it runs out.
      await waitFor(
        'a renewal by the new worker',
        async () => ((await locks.inspect(held)).leaseUntil ?? 0) > atKill.leaseUntil!,
        60_000,
      );
      expect(await locks.inspect(held)).toMatchObject({ holder: 'holder', token: atKill.token });
      // That renewal was the new worker's sweep: Temporal still counts the dead worker's keeper as
      // running (its heartbeat timeout is two minutes), and runs it again only after that. The
      // holder (this process, alive) keeps its keep-alive watch open throughout.
      const pending =
        (await fixture.env.client.workflow.getHandle(holder.session.workflowId).describe()).raw
          .pendingActivities ?? [];
      expect(pending.map((a) => [a.activityType?.name, a.attempt]).sort()).toEqual([
        ['awaitHolderKeepAlives', 1],
        ['keepLease', 1],
      ]);
      expect(await release(fixture.env.client, holder.lease)).toMatchObject({ ok: true });
      await waitFor(
        'the sleeper holding',
        async () => (await stateOf(fixture.env.client, sleeper.workflowId)).phase === 'holding',
        30_000,
      );
      const sleeperLease = (await stateOf(fixture.env.client, sleeper.workflowId)).lease!;
      expect(BigInt(sleeperLease.token)).toBeGreaterThan(BigInt(holder.lease.token));
      expect(await release(fixture.env.client, sleeperLease)).toMatchObject({ ok: true });
      await resolve(fixture.env.client, escalated.workflowId, {
        action: 'abandon',
        operator: 'carol',
        reason: 'after the crash',
      });

      expect(await holder.session.result()).toMatchObject({ status: 'released' });
      expect(await sleeper.result()).toMatchObject({ status: 'released' });
      expect(await escalated.result()).toMatchObject({
        status: 'abandoned',
        reason: 'abandoned by carol: after the crash',
      });
      // Exactly one run of each session: nothing was started twice.
      for (const id of [holder.session.workflowId, sleeper.workflowId, escalated.workflowId]) {
        const runs = [];
        for await (const run of fixture.env.client.workflow.list({ query: `WorkflowId = '${id}'` }))
          runs.push(run);
        expect(runs).toHaveLength(1);
      }
    } finally {
      await stopWorkerProcess(worker, 'SIGTERM');
      await locks.close();
    }
  }, 120_000);
});
