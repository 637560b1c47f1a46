import type { Client } from '@temporalio/client';
import {
  acquire,
  acquisitionWorkflowId,
  forceRelease,
  release,
  resolve,
  startAcquisition,
  stateOf,
} from '../../client/lockwardenClient';
import type { LockService } from '../../locks/lockService';
import type { FakeAnswer } from './fakeMessagesApi';
import { waitFor } from './waitFor';

/**
 * One named path through the workflows, run against a real worker. `run` returns the workflow ids to
 * record, by history name (`<scenario>` or `<scenario>-<part>`).
 */
export interface Scenario {
  name: string;
  /** When set, the worker decides through the real SDK against a fake Messages API scripted so. */
  model?: FakeAnswer[];
  run(client: Client, taskQueue: string, locks: LockService, tag: string): Promise<Record<string, string>>;
}

const modelDecision = (patch: Record<string, unknown>): FakeAnswer => ({
  kind: 'tool',
  input: {
    decision: 'retry',
    retry_after_ms: 120_000,
    backoff_strategy: 'exponential',
    lease_renewal_instruction: null,
    starvation_risk: 'medium',
    deadlock_detected: false,
    escalation_reason: null,
    explanation: 'The holder is busy.',
    ...patch,
  },
});

const phase = (client: Client, workflowId: string, wanted: string) => async () =>
  (await stateOf(client, workflowId)).phase === wanted;

/** The paths whose histories are committed under test/histories and replayed on every run. */
export const SCENARIOS: Scenario[] = [
  {
    name: 'session-fast-path-hold-release',
    async run(client, taskQueue, _locks, tag) {
      const { lease, session } = await acquire(
        client,
        { key: `fast-${tag}`, requester: 'replica-a', ttlMs: 900 },
        { taskQueue },
      );
      await new Promise((r) => setTimeout(r, 700)); // long enough for two renewals
      await release(client, lease);
      await session.result();
      return { 'session-fast-path-hold-release': session.workflowId };
    },
  },
  {
    name: 'session-retry-then-acquire',
    async run(client, taskQueue, locks, tag) {
      const key = `contended-${tag}`;
      const held = await locks.tryAcquire({ key, requester: 'outsider', ttlMs: 60_000 });
      if (!held.granted) throw new Error('scenario setup: key already held');
      const session = await startAcquisition(
        client,
        { key, requester: 'replica-b', budget: { baseBackoffMs: 50, maxBackoffMs: 150 } },
        { taskQueue },
      );
      await new Promise((r) => setTimeout(r, 600));
      await locks.release(held.lease);
      await waitFor('holding', phase(client, session.workflowId, 'holding'));
      await release(client, (await stateOf(client, session.workflowId)).lease!);
      await session.result();
      return { 'session-retry-then-acquire': session.workflowId };
    },
  },
  {
    name: 'session-wake-on-release',
    async run(client, taskQueue, _locks, tag) {
      const key = `wake-${tag}`;
      const holder = await acquire(client, { key, requester: 'holder' }, { taskQueue });
      const waiter = await startAcquisition(
        client,
        { key, requester: 'waiter', budget: { baseBackoffMs: 8_000, maxBackoffMs: 8_000 } },
        { taskQueue },
      );
      await waitFor('backing off', phase(client, waiter.workflowId, 'backing-off'));
      await release(client, holder.lease);
      await waitFor('holding', phase(client, waiter.workflowId, 'holding'));
      await release(client, (await stateOf(client, waiter.workflowId)).lease!);
      await waiter.result();
      return {
        'session-wake-on-release-holder': holder.session.workflowId,
        'session-wake-on-release-waiter': waiter.workflowId,
      };
    },
  },
  {
    name: 'session-escalate-operator-retry',
    model: [
      modelDecision({}),
      modelDecision({
        decision: 'escalate',
        retry_after_ms: null,
        backoff_strategy: null,
        escalation_reason: 'holder stuck',
      }),
      modelDecision({}),
    ],
    async run(client, taskQueue, locks, tag) {
      const key = `operator-${tag}`;
      const held = await locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
      if (!held.granted) throw new Error('scenario setup');
      const session = await startAcquisition(
        client,
        { key, requester: 'challenger', budget: { maxBackoffMs: 200, baseBackoffMs: 50 } },
        { taskQueue },
      );
      await waitFor('escalated', phase(client, session.workflowId, 'escalated'));
      await locks.release(held.lease);
      await resolve(client, session.workflowId, {
        action: 'retry',
        extraRetries: 2,
        operator: 'alice',
        reason: 'job killed',
      });
      await waitFor('holding', phase(client, session.workflowId, 'holding'));
      await release(client, (await stateOf(client, session.workflowId)).lease!);
      await session.result();
      return { 'session-escalate-operator-retry': session.workflowId };
    },
  },
  {
    name: 'session-escalate-timeout-abandon',
    async run(client, taskQueue, locks, tag) {
      const key = `timeout-${tag}`;
      await locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
      const session = await startAcquisition(
        client,
        {
          key,
          requester: 'challenger',
          budget: { maxRetries: 1, baseBackoffMs: 50 },
          escalationTimeoutMs: 1_000,
        },
        { taskQueue },
      );
      await session.result();
      return { 'session-escalate-timeout-abandon': session.workflowId };
    },
  },
  {
    name: 'session-deadlock',
    async run(client, taskQueue, _locks, tag) {
      const [a, b] = [`deadlock-a-${tag}`, `deadlock-b-${tag}`];
      const holdA = await acquire(client, { key: a, requester: 'alpha' }, { taskQueue });
      const holdB = await acquire(client, { key: b, requester: 'beta' }, { taskQueue });
      const budget = { baseBackoffMs: 50, maxBackoffMs: 200 };
      const alphaWaits = await startAcquisition(
        client,
        { key: b, requester: 'alpha', budget },
        { taskQueue },
      );
      const betaWaits = await startAcquisition(client, { key: a, requester: 'beta', budget }, { taskQueue });
      await betaWaits.result();
      await waitFor('escalated', phase(client, alphaWaits.workflowId, 'escalated'));
      await resolve(client, alphaWaits.workflowId, {
        action: 'abandon',
        operator: 'bob',
        reason: 'breaking the cycle',
      });
      await alphaWaits.result();
      await release(client, holdA.lease);
      await release(client, holdB.lease);
      return {
        'session-deadlock-escalator': alphaWaits.workflowId,
        'session-deadlock-halted': betaWaits.workflowId,
      };
    },
  },
  {
    name: 'session-lease-lost',
    async run(client, taskQueue, locks, tag) {
      const key = `lost-${tag}`;
      const { lease, session } = await acquire(
        client,
        { key, requester: 'replica-a', ttlMs: 1_500 },
        { taskQueue },
      );
      await locks.release(lease);
      await locks.tryAcquire({ key, requester: 'replica-b', ttlMs: 60_000 });
      await session.result();
      return { 'session-lease-lost': session.workflowId };
    },
  },
  {
    name: 'withLock-holdLockFor',
    async run(client, taskQueue, _locks, tag) {
      const key = `job-${tag}`;
      const workflowId = `job/${tag}`;
      await client.workflow.execute('holdLockFor', {
        taskQueue,
        workflowId,
        args: [{ key, requester: 'nightly-job' }, 200],
      });
      return {
        'withLock-holdLockFor-parent': workflowId,
        'withLock-holdLockFor-session': acquisitionWorkflowId(key, 'nightly-job'),
      };
    },
  },
  {
    name: 'releaseLock-fenced',
    async run(client, taskQueue, locks, tag) {
      const key = `release-${tag}`;
      const held = await locks.tryAcquire({ key, requester: 'owner', ttlMs: 60_000 });
      if (!held.granted) throw new Error('scenario setup: key already held');
      await forceRelease(client, held.lease, { taskQueue });
      return { 'releaseLock-fenced': `release/${key}/owner/${held.lease.token}` };
    },
  },
];
