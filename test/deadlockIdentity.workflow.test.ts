import { WorkflowFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { acquire, release, resolve, startAcquisition, stateOf } from '../client/lockwardenClient';
import { acquisitionWorkflowId } from '../policy/constants';
import type { SessionOutcome } from '../policy/sessionModel/sessionTypes';
import { LockwardenPlugin } from '../worker/lockwardenPlugin';
import type { transferBetween } from './support/userWorkflows';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

const USER_WORKFLOWS = require.resolve('./support/userWorkflows');

// Who is a thread of control in the wait-for graph: a session alone by default, the parent workflow
// for withLock, or an owner the caller declares. Requester names never join anything.
describe('deadlock identity', () => {
  const fixture = sessionFixture();

  it('reused requester names on many keys: every waiter holds in turn and no session halts', async () => {
    // Each key held by one of w0..w3 and waited for by the other three: the same names on every key,
    // as a user who names requesters by replica would. By name, w0 waits for k1 held by w1 and w1 for
    // k0 held by w0; but no session holds while it waits, so there is no cycle.
    const names = ['w0', 'w1', 'w2', 'w3'];
    const keys = names.map((_, i) => unique(`reused-${i}`));
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const holders = await Promise.all(
        keys.map((key, i) => acquire(fixture.env.client, { key, requester: names[i]! }, { taskQueue })),
      );
      const waiters = await Promise.all(
        keys.flatMap((key, i) =>
          names
            .filter((_, j) => j !== i)
            .map((requester) => startAcquisition(fixture.env.client, { key, requester }, { taskQueue })),
        ),
      );
      await waitFor('every waiter queued', async () => {
        const queues = await Promise.all(keys.map((key) => fixture.locks.inspect(key)));
        return queues.every((q) => q.waiters.length === names.length - 1);
      });
      // Each holder releases; then whoever holds next releases, until every key's queue is empty.
      await Promise.all(holders.map(({ lease }) => release(fixture.env.client, lease)));
      const outcomes: SessionOutcome[] = [];
      await Promise.all(
        waiters.map(async (waiter) => {
          await waitFor(`${waiter.workflowId} holding`, async () => {
            const state = await stateOf(fixture.env.client, waiter.workflowId);
            return state.phase === 'holding' || state.phase === 'halted';
          });
          const { lease } = await stateOf(fixture.env.client, waiter.workflowId);
          if (lease) await release(fixture.env.client, lease);
          outcomes.push(await waiter.result());
        }),
      );
      expect(outcomes.map((o) => o.status)).toEqual(waiters.map(() => 'released'));
      // Each key's newest token came after its first holder's: the waiters held it in turn after it.
      for (const [i, key] of keys.entries())
        expect(BigInt((await fixture.locks.inspect(key)).lastToken!)).toBeGreaterThan(
          BigInt(holders[i]!.lease.token),
        );
    });
  });

  it('a lock inversion between two withLock parents is found: one escalates, the other halts and lets go', async () => {
    const taskQueue = unique('inversion');
    const plugin = new LockwardenPlugin({
      locks: fixture.locks,
      client: fixture.env.client,
      log: silentLog,
      escalations: fixture.escalations,
    });
    const worker = await Worker.create({
      connection: fixture.env.nativeConnection,
      taskQueue,
      workflowsPath: USER_WORKFLOWS,
      activities: { exportBatch: async () => 'unused' },
      plugins: [plugin],
    });
    const [a, b] = [unique('account-a'), unique('account-b')];
    const [left, right] = ['transfer-left', 'transfer-right'].map((name) => unique(name));
    await worker.runUntil(async () => {
      const start = (workflowId: string, first: string, second: string) =>
        fixture.env.client.workflow.start<typeof transferBetween>('transferBetween', {
          taskQueue,
          workflowId,
          args: [{ first, second, pauseMs: 1_000 }],
        });
      const jobs = [await start(left!, a, b), await start(right!, b, a)];
      // The escalator is the first owner by name: the left job. Its session on b escalates.
      const escalated = acquisitionWorkflowId(b, left!);
      await waitFor('the left job escalated', async () => {
        try {
          return (await stateOf(fixture.env.client, escalated)).phase === 'escalated';
        } catch {
          return false;
        }
      });
      const state = await stateOf(fixture.env.client, escalated);
      expect(state.owner).toBe(left);
      expect(state.escalation).toMatchObject({
        deadlock: true,
        reason: expect.stringContaining(`${left} waits for ${b} held by ${right}`),
      });
      // The right job's session halted, so its withLock threw and it let go of b.
      const failure = await jobs[1]!.result().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      expect(String((failure as WorkflowFailedError).cause?.message)).toMatch(/not acquired: halted/);
      const halted = await fixture.env.client.workflow.getHandle(acquisitionWorkflowId(a, right!)).result();
      expect(halted).toMatchObject({ status: 'halted', deadlock: { escalator: left } });
      // The operator lets the left job try again: b is free now, and it finishes its transfer.
      await resolve(fixture.env.client, escalated, {
        action: 'retry',
        operator: 'ops',
        reason: 'the other job let go',
        extraRetries: 3,
      });
      // It held a, then b once the right job had let go: b's newest token, issued after a's.
      const tokens = await jobs[0]!.result();
      expect(tokens.second).toBe((await fixture.locks.inspect(b)).lastToken);
      expect(BigInt(tokens.second)).toBeGreaterThan(BigInt(tokens.first));
    });
  });
});
