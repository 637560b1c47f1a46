import { Writable } from 'node:stream';
import pino from 'pino';
import { createMetrics } from '../activities/metrics';
import { createSessionWaker } from '../activities/sessionSignals';
import {
  acquisitionWorkflowId,
  awaitLeaseOf,
  release,
  startAcquisition,
  stateOf,
} from '../client/lockwardenClient';
import { withQueueSweep } from '../worker/queueSweep';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// A head that cannot act: its session runs (a wake-up reaches it) but never tries, as a session
// whose workflow task fails on every replay did in the cluster campaign, holding its queue for its
// ticket's hour. Here its session waits on a task queue no worker polls. The sweep wakes it, and
// once it has woken it for `unresponsiveHeadMs` without a try, takes it out of the queue and wakes
// the next waiter.

const UNRESPONSIVE_MS = 1_500;

describe('a head that never tries after its wake-ups', () => {
  const fixture = sessionFixture();

  it('is taken out of the queue by the sweep, which wakes the waiter behind it', async () => {
    const { client } = fixture.env;
    const key = unique('unresponsive-head');
    const lines: string[] = [];
    const log = pino(
      { level: 'info' },
      new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) }),
    );
    const metrics = createMetrics();
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      // A lease no session keeps, which runs out with nobody to tell the queue.
      const held = await fixture.locks.tryAcquire({ key, requester: 'gone-holder', ttlMs: 2_000 });
      expect(held.granted).toBe(true);
      // The stuck head: a ticket first in the queue, and a running session that nothing runs.
      await client.workflow.start('acquireLock', {
        taskQueue: unique('no-worker'),
        workflowId: acquisitionWorkflowId(key, 'stuck'),
        args: [{ key, requester: 'stuck' }],
      });
      await fixture.locks.tryAcquire({ key, requester: 'stuck', ttlMs: 30_000, queueTicketMs: 3_600_000 });
      const next = await startAcquisition(client, { key, requester: 'next' }, { taskQueue });
      await waitFor(
        'the next waiter parked',
        async () => (await stateOf(client, next.workflowId)).phase === 'queued',
      );
      expect(await fixture.locks.position({ key, requester: 'next' })).toBe(2);

      const sweep = { locks: fixture.locks, waker: createSessionWaker(client, log), log, metrics };
      await withQueueSweep({ ...sweep, everyMs: 200, unresponsiveHeadMs: UNRESPONSIVE_MS }, async () => {
        expect(await awaitLeaseOf(client, next.workflowId)).toMatchObject({
          status: 'acquired',
          lease: { holder: 'next' },
        });
      });
      expect(await fixture.locks.position({ key, requester: 'stuck' })).toBeNull();
      const skipped = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => e.event === 'lock.skip-unresponsive-waiter');
      expect(skipped).toEqual([
        expect.objectContaining({ key, requester: 'stuck', wokenForMs: UNRESPONSIVE_MS }),
      ]);
      expect(
        await metrics.registry.getSingleMetricAsString('lockwarden_unresponsive_waiters_total'),
      ).toContain('lockwarden_unresponsive_waiters_total 1');
      await release(client, { key, holder: 'next' });
      await client.workflow.getHandle(acquisitionWorkflowId(key, 'stuck')).terminate('the test ends');
    });
  }, 60_000);
});
