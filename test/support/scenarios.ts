import type { Client } from '@temporalio/client';
import { releaseLease, startAcquisition } from '../../client/lockwardenClient';
import type { LockService } from '../../locks/lockService';
import type { FakeAnswer } from './fakeMessagesApi';

/** One named path through the workflows, run against a real worker; returns the workflow id to record. */
export interface Scenario {
  name: string;
  /** When set, the worker decides through the real SDK against a fake Messages API scripted so. */
  model?: FakeAnswer[];
  run(client: Client, taskQueue: string, locks: LockService, tag: string): Promise<string>;
}

const modelDecision = (patch: Record<string, unknown>) => ({
  kind: 'tool' as const,
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

/** The paths whose histories are committed under test/histories and replayed on every run. */
export const SCENARIOS: Scenario[] = [
  {
    name: 'acquireLock-uncontended',
    async run(client, taskQueue, _locks, tag) {
      const session = await startAcquisition(
        client,
        { key: `uncontended-${tag}`, requester: 'replica-a' },
        { taskQueue },
      );
      await session.result();
      return session.workflowId;
    },
  },
  {
    name: 'acquireLock-contended-then-acquired',
    async run(client, taskQueue, locks, tag) {
      const key = `contended-${tag}`;
      const held = await locks.tryAcquire({ key, requester: 'replica-a', ttlMs: 60_000 });
      if (!held.granted) throw new Error('scenario setup: key already held');
      const session = await startAcquisition(
        client,
        { key, requester: 'replica-b', budget: { baseBackoffMs: 50, maxBackoffMs: 150 } },
        { taskQueue },
      );
      await new Promise((resolve) => setTimeout(resolve, 600));
      await locks.release(held.lease);
      await session.result();
      return session.workflowId;
    },
  },
  {
    name: 'acquireLock-model-retry-clamped-then-escalate',
    model: [
      modelDecision({}),
      modelDecision({
        decision: 'escalate',
        retry_after_ms: null,
        backoff_strategy: null,
        escalation_reason: 'holder stuck',
      }),
    ],
    async run(client, taskQueue, locks, tag) {
      const key = `model-${tag}`;
      await locks.tryAcquire({ key, requester: 'incumbent', ttlMs: 60_000 });
      const session = await startAcquisition(
        client,
        { key, requester: 'challenger', budget: { maxBackoffMs: 200, baseBackoffMs: 50 } },
        { taskQueue },
      );
      await session.result();
      return session.workflowId;
    },
  },
  {
    name: 'acquireLock-budget-spent-escalates',
    async run(client, taskQueue, locks, tag) {
      const key = `budget-${tag}`;
      await locks.tryAcquire({ key, requester: 'incumbent', ttlMs: 60_000 });
      const session = await startAcquisition(
        client,
        { key, requester: 'challenger', budget: { maxRetries: 3, baseBackoffMs: 50, maxBackoffMs: 100 } },
        { taskQueue },
      );
      await session.result();
      return session.workflowId;
    },
  },
  {
    name: 'releaseLock-fenced',
    async run(client, taskQueue, locks, tag) {
      const key = `release-${tag}`;
      const held = await locks.tryAcquire({ key, requester: 'owner', ttlMs: 60_000 });
      if (!held.granted) throw new Error('scenario setup: key already held');
      await releaseLease(client, held.lease, { taskQueue });
      return `release/${key}/owner/${held.lease.token}`;
    },
  },
];
