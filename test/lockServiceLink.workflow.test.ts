import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { FaultyLink } from '../campaign/faultyLink';
import { stateOf } from '../client/lockwardenClient';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import { acquisitionWorkflowId } from '../policy/constants';
import { SERVER_URLS } from './support/lockBackends';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// A holder that loses its lock service mid-hold, on a real Redis behind a link the test cuts: the
// link hangs (it does not refuse), so only a bounded call lets the holder notice.
describe('a holder cut off from its lock service', () => {
  const fixture = sessionFixture();
  let link: FaultyLink;
  let direct: LockService;
  let throughLink: LockService;

  beforeAll(async () => {
    const port = Number(new URL(SERVER_URLS.redis).port);
    link = new FaultyLink({ host: '127.0.0.1', port }, 0);
    await link.start();
    direct = await openLockService(SERVER_URLS.redis, { maxTtlMs: 60_000 });
    throughLink = await openLockService(`redis://${link.address}`, { maxTtlMs: 60_000 });
  });
  afterAll(async () => {
    // The client through the link first: it would reconnect through a link being closed.
    await throughLink.close().catch(() => undefined);
    await link.close();
    await direct.close();
  });

  it('ends as lease-lost before its deadline, and withLock stops the job and throws LeaseLost', async () => {
    const key = unique('cut-off');
    const requester = unique('job');
    await withWorker(fixture.env, { locks: throughLink, log: silentLog }, async (taskQueue) => {
      // A job that would hold for a minute, on a 3 s lease renewed every second.
      const job = fixture.env.client.workflow.execute('holdLockFor', {
        taskQueue,
        workflowId: unique('parent'),
        args: [{ key, requester, ttlMs: 3_000 }, 60_000],
      });
      job.catch(() => undefined);
      const sessionId = acquisitionWorkflowId(key, requester);
      await waitFor(
        'holding',
        async () => (await stateOf(fixture.env.client, sessionId)).phase === 'holding',
      );
      const cutAt = Date.now();
      link.cut(20_000);
      // What the service holds, read past the link: no renewal arrives, so this deadline stands.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const { leaseUntil, holder } = await direct.inspect(key);
      expect(holder).toBe(requester);

      const failure = await job.then(
        () => null,
        (error: WorkflowFailedError) => error.cause,
      );
      const failedAt = Date.now();
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect((failure as ApplicationFailure).type).toBe('LeaseLost');
      // The job was stopped, not waited out: it failed long before its minute of holding was up.
      expect(failedAt - cutAt).toBeLessThan(60_000);
      const session = fixture.env.client.workflow.getHandle(sessionId);
      expect(await session.result()).toMatchObject({
        status: 'lease-lost',
        reason: expect.stringContaining('could not be reached before the lease ran out'),
      });
      // The hold ended while the service still counted the lease as its own: never used past it.
      const closedAt = (await session.describe()).closeTime!.getTime();
      expect(closedAt).toBeLessThanOrEqual(leaseUntil!);
      expect((await direct.inspect(key)).holder).toBe(requester); // the service only lets it run out
      link.heal();
    });
  });
});
