import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { acquire, release, startAwaitingLease } from '../client/lockwardenClient';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';

// acquire() starts a session and its wait for the lease in one call (update-with-start): the wait is
// taken in the session's first workflow task, and an uncontended session answers it there too.

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The history's event kinds up to the first completed update, in order. */
function kindsUntilAnswered(events: HistoryEvent[]): string[] {
  const kinds: string[] = [];
  for (const e of events) {
    if (e.workflowTaskCompletedEventAttributes) kinds.push('task-completed');
    if (e.workflowExecutionUpdateAcceptedEventAttributes) kinds.push('update-accepted');
    if (e.workflowExecutionUpdateCompletedEventAttributes) {
      kinds.push('update-completed');
      break;
    }
  }
  return kinds;
}

describe('acquire: the session and its wait start together', () => {
  const fixture = sessionFixture();

  it('an uncontended acquire is answered in the first workflow task, with the lease the service issued', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      const key = unique('with-start');
      const { lease, session } = await acquire(client, { key, requester: 'alone' }, { taskQueue });
      expect(await fixture.locks.inspect(key)).toMatchObject({ holder: 'alone', token: lease.token });
      expect(session.uiUrl).toContain(session.runId);

      const history = await client.workflow.getHandle(session.workflowId).fetchHistory();
      // Accepted and answered in the one task that started the session: no second task, no second
      // request for the wait.
      expect(kindsUntilAnswered(history.events ?? [])).toEqual([
        'task-completed',
        'update-accepted',
        'update-completed',
      ]);
      expect(await release(client, lease)).toMatchObject({ ok: true });
      expect(await session.result()).toMatchObject({ status: 'released' });
    });
  });

  it('a contended acquire waits on the wait it started with, and gets the lease the release handed over', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      const key = unique('with-start');
      const holder = await acquire(client, { key, requester: 'first' }, { taskQueue });
      const waiting = await startAwaitingLease(client, { key, requester: 'second' }, { taskQueue });
      let answered = false;
      void waiting.news.then(() => (answered = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(answered).toBe(false);

      await release(client, holder.lease);
      const news = await waiting.news;
      expect(news).toMatchObject({ status: 'acquired', lease: { holder: 'second' } });
      const second = news.status === 'acquired' ? news.lease : null;
      expect(BigInt(second!.token)).toBeGreaterThan(BigInt(holder.lease.token));
      await release(client, second!);
    });
  });

  it("refuses a second session for a requester whose session runs, and leaves the first one's wait alone", async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      const key = unique('with-start');
      const holder = await acquire(client, { key, requester: 'twice' }, { taskQueue });
      await expect(acquire(client, { key, requester: 'twice' }, { taskQueue })).rejects.toBeInstanceOf(
        WorkflowExecutionAlreadyStartedError,
      );
      expect(await fixture.locks.inspect(key)).toMatchObject({ holder: 'twice', token: holder.lease.token });
      await release(client, holder.lease);
    });
  });
});
