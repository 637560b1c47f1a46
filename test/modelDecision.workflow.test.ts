import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { startAcquisition } from '../client/lockwardenClient';
import type { SqliteLockService } from '../locks/sqliteLockService';
import { activitySummaries, timerSummaries } from './support/history';
import { FakeMessagesApi } from './support/fakeMessagesApi';
import {
  connectTestEnv,
  freshSqliteLockService,
  silentLog,
  unique,
  withWorker,
} from './support/temporalFixture';

const decision = (patch: Record<string, unknown>) => ({
  decision: 'retry',
  retry_after_ms: 300,
  backoff_strategy: 'exponential',
  lease_renewal_instruction: 'renew the lease every 5 s',
  starvation_risk: 'medium',
  deadlock_detected: false,
  escalation_reason: null,
  explanation: 'The holder is busy; wait a little.',
  ...patch,
});

describe('acquireLock with a model deciding (real SDK, fake Messages API)', () => {
  let env: TestWorkflowEnvironment;
  let locks: SqliteLockService;
  const fake = new FakeMessagesApi();

  beforeAll(async () => {
    env = await connectTestEnv();
    await fake.start();
  });
  afterAll(async () => {
    await fake.stop();
    await env?.teardown();
  });
  beforeEach(() => {
    locks = freshSqliteLockService();
  });
  afterEach(() => locks.close());

  it("follows the model's retry, clamped by the harness, then its escalation; the history shows both", async () => {
    const key = unique('export');
    await locks.tryAcquire({ key, requester: 'replica-a', ttlMs: 60_000 });
    fake.answer(
      { kind: 'tool', input: decision({ retry_after_ms: 3_600_000 }) },
      {
        kind: 'tool',
        input: decision({
          decision: 'escalate',
          retry_after_ms: null,
          backoff_strategy: null,
          escalation_reason: 'holder stuck for too long',
        }),
      },
    );
    const decider = createAnthropicDecider({
      apiKey: 'test',
      baseURL: fake.baseURL,
      model: 'claude-haiku-4-5',
      largeModel: 'claude-sonnet-4-5',
      timeoutMs: 2_000,
      maxTokens: 512,
    });
    await withWorker(env, { locks, log: silentLog, decider }, async (taskQueue) => {
      const session = await startAcquisition(
        env.client,
        {
          key,
          requester: 'replica-b',
          budget: { maxBackoffMs: 250, baseBackoffMs: 50 },
          escalationTimeoutMs: 1_000,
        },
        { taskQueue },
      );
      const outcome = await session.result();
      expect(outcome).toMatchObject({
        status: 'abandoned',
        reason: expect.stringContaining('holder stuck for too long'),
        attempts: 2,
      });
      const history = await env.client.workflow.getHandle(session.workflowId).fetchHistory();
      // The model asked for an hour; the harness slept 250 ms (its maxBackoffMs) and says so.
      expect(timerSummaries(history)).toEqual([
        'backoff 250 ms, exponential, attempt 1 of 21 (asked 3600000 ms, clamped): The holder is busy; wait a little.',
        'wait for operator, up to 1000 ms',
      ]);
      expect(activitySummaries(history)).toEqual([
        'fast path, attempt 1',
        'retry decision, attempt 1',
        'fast path, attempt 2',
        'retry decision, attempt 2',
        'leave the queue: escalated',
        'page on-call: holder stuck for too long',
      ]);
      expect(fake.requests).toHaveLength(2);
      // The advisory renewal text was never acted on: the incumbent still holds the lease it had.
      expect((await locks.inspect(key)).holder).toBe('replica-a');
    });
  });
});
