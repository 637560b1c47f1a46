import { setTimeout as delay } from 'node:timers/promises';
import {
  acquire,
  awaitLeaseOf,
  release,
  type StartedAcquisition,
  startAcquisition,
  stateOf,
} from '../client/lockwardenClient';
import { SqliteLockService } from '../locks/sqliteLockService';
import { activitySummaries } from '../devkit/history';
import { freePort, parseSamples, type Sample, sumOf } from './support/prometheusText';
import { sessionFixture } from './support/temporalFixture';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';
import { startWorkerProcess, stopWorkerProcess } from './support/workerProcess';

describe("the worker's /metrics", () => {
  const fixture = sessionFixture();

  it('counts a contended run as it happened: waits, hand-offs, decisions, renewals, parked waiters, a lost lease, and the SDK worker metrics', async () => {
    const [port, sdkPort] = [await freePort(), await freePort()];
    const taskQueue = unique('metrics');
    const lockFile = freshSqlitePath();
    const worker = startWorkerProcess(lockFile, taskQueue, {
      METRICS_PORT: String(port),
      LOCKWARDEN_SDK_METRICS_PORT: String(sdkPort),
    });
    const scrape = async (): Promise<Sample[]> =>
      parseSamples(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
    try {
      await waitFor('the worker serving /metrics', async () => (await scrape()).length > 0, 30_000);
      const key = unique('contended');
      // TTL 3 s: each holder renews every second, so a 1.2 s hold renews at least once.
      const request = (requester: string) => ({ key, requester, ttlMs: 3_000 });
      const first = await acquire(fixture.env.client, request('holder'), { taskQueue });
      const waiters: StartedAcquisition[] = [];
      for (const requester of ['w1', 'w2', 'w3']) {
        waiters.push(await startAcquisition(fixture.env.client, request(requester), { taskQueue }));
        await waitFor(`${requester} queued`, async () => {
          return (await stateOf(fixture.env.client, waiters.at(-1)!.workflowId)).phase === 'queued';
        });
      }
      expect(sumOf(await scrape(), 'lockwarden_parked_waiters')).toBe(3);

      await delay(1_200);
      let lease = first.lease;
      for (const waiter of waiters) {
        expect(await release(fixture.env.client, lease)).toMatchObject({ ok: true });
        const next = await awaitLeaseOf(fixture.env.client, waiter.workflowId);
        if (next.status !== 'acquired') throw new Error(`${waiter.workflowId} ended ${next.outcome.status}`);
        lease = next.lease;
        await delay(1_200);
      }
      expect(await release(fixture.env.client, lease)).toMatchObject({ ok: true });
      const sessions = [first.session, ...waiters];
      await Promise.all(sessions.map((s) => s.result()));

      // What the histories say happened, to hold the metrics against.
      const summaries = (
        await Promise.all(
          sessions.map(async (s) =>
            activitySummaries(await fixture.env.client.workflow.getHandle(s.workflowId).fetchHistory()),
          ),
        )
      ).flat();
      const decisions = summaries.filter((s) => s.startsWith('retry decision')).length;
      expect(decisions).toBeGreaterThanOrEqual(3);
      // Each of the four holds was kept by one keeper activity.
      expect(summaries.filter((s) => s.startsWith('keep token'))).toHaveLength(4);

      const samples = await scrape();
      expect(sumOf(samples, 'lockwarden_acquisition_wait_seconds_count', { outcome: 'acquired' })).toBe(4);
      // A hand-off is counted when the release's wake-up reached the waiter before its grant; a waiter
      // whose own park timer came due at the moment of the release takes the lease without it (on a
      // loaded machine, now and then). So: at least one of the three, none missing from the
      // histogram's buckets, each quick.
      const handoffs = sumOf(samples, 'lockwarden_handoff_seconds_count');
      expect(handoffs).toBeGreaterThanOrEqual(1);
      expect(handoffs).toBeLessThanOrEqual(3);
      expect(sumOf(samples, 'lockwarden_handoff_seconds_bucket', { le: '2.5' })).toBe(handoffs);
      expect(
        sumOf(samples, 'lockwarden_decisions_total', {
          provider: 'policy',
          fallback_cause: 'no-model-configured',
        }),
      ).toBe(decisions);
      // Every hold lasted over a renewal interval (1 s at a 3 s TTL), and no release left its keeper to
      // renew a lease that was given back (the release quiets it): not one renewal refused.
      expect(sumOf(samples, 'lockwarden_renewals_total', { result: 'ok' })).toBeGreaterThanOrEqual(4);
      expect(sumOf(samples, 'lockwarden_renewals_total', { result: 'refused' })).toBe(0);
      expect(sumOf(samples, 'lockwarden_leases_lost_total')).toBe(0);
      expect(sumOf(samples, 'lockwarden_parked_waiters')).toBe(0);
      // The waiters waited longer than the first holder, who took a free key.
      expect(
        sumOf(samples, 'lockwarden_acquisition_wait_seconds_sum', { outcome: 'acquired' }),
      ).toBeGreaterThan(1.2);
      // No key or requester becomes a label: the series count stays bounded.
      const lockwarden = samples.filter((s) => s.name.startsWith('lockwarden_'));
      expect(lockwarden.filter((s) => 'key' in s.labels || 'requester' in s.labels)).toEqual([]);
      // The Temporal SDK's own worker metrics, from the runtime's exporter, on the same endpoint.
      expect(sumOf(samples, 'temporal_workflow_completed', { task_queue: taskQueue })).toBeGreaterThanOrEqual(
        4,
      );
      expect(sumOf(samples, 'temporal_worker_start', { task_queue: taskQueue })).toBe(1);

      // A lease lost behind the session's back (released at the service and taken by another client):
      // the next renewal finds another token, and the counter rises by one, at the renewal.
      const victim = await acquire(
        fixture.env.client,
        { key: unique('lost'), requester: 'victim', ttlMs: 3_000 },
        { taskQueue },
      );
      const direct = new SqliteLockService({ path: lockFile });
      try {
        expect(await direct.release(victim.lease)).toMatchObject({ ok: true });
        expect(
          (await direct.tryAcquire({ key: victim.lease.key, requester: 'thief', ttlMs: 30_000 })).granted,
        ).toBe(true);
      } finally {
        await direct.close();
      }
      expect(await victim.session.result()).toMatchObject({ status: 'lease-lost' });
      const afterLoss = await scrape();
      expect(sumOf(afterLoss, 'lockwarden_leases_lost_total')).toBe(1);
      expect(sumOf(afterLoss, 'lockwarden_leases_lost_total', { at: 'renewal' })).toBe(1);
      expect(sumOf(afterLoss, 'lockwarden_renewals_total', { result: 'refused' })).toBe(1);
    } finally {
      await stopWorkerProcess(worker, 'SIGTERM');
    }
  });
});
