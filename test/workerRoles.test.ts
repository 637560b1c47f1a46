// Seed 003: "Teams whose one process must both draft and renew should stop." A lock worker given the
// model key refuses to start, naming the two roles, unless a lab opts in by name; in that mode every
// decision record, the metrics and the session's state say so.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { createMetrics } from '../activities/metrics';
import { acquire, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import { VALID_DECISION } from '../devkit/decisionInputs';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { FAKE_MODEL } from './support/runScenario';
import { sessionFixture, silentLog, TEMPORAL_ADDRESS, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

const run = promisify(execFile);

describe('one process never both keeps leases and holds the model key', () => {
  const fixture = sessionFixture();
  const model = new FakeMessagesApi();
  beforeAll(() => model.start());
  afterAll(() => model.stop());

  it('the lock worker refuses ANTHROPIC_API_KEY without a model queue, naming the two roles', async () => {
    const started = run(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      cwd: path.join(__dirname, '..'),
      env: { ...process.env, TEMPORAL_ADDRESS, ANTHROPIC_API_KEY: 'sk-ant-test', LOG_LEVEL: 'silent' },
      timeout: 60_000,
    });
    // A configuration that cannot work: exit code 2, like every refused setting.
    await expect(started).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(
        /ANTHROPIC_API_KEY: this lock worker keeps leases, so it holds no model key\. Run the two roles apart: lockwarden-model-worker .*lockwarden-worker/,
      ),
    });
  });

  it('in the lab-only mode, every decision record and the metrics say so', async () => {
    model.answer({ kind: 'tool', input: VALID_DECISION }, { kind: 'tool', input: VALID_DECISION });
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: model.baseURL });
    const metrics = createMetrics();
    const key = unique('lab');
    const deps = { locks: fixture.locks, log: silentLog, decider, metrics, labSingleProcess: true };
    await withWorker(fixture.env, deps, async (taskQueue) => {
      const held = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
      const waiter = await startAcquisition(
        fixture.env.client,
        { key, requester: 'waiter', wakeOnRelease: false },
        { taskQueue },
      );
      await waitFor(
        'a decision',
        async () => (await stateOf(fixture.env.client, waiter.workflowId)).decisions.length > 0,
      );
      const [decision] = (await stateOf(fixture.env.client, waiter.workflowId)).decisions;
      expect(decision).toMatchObject({ provider: 'anthropic', labSingleProcess: true });
      expect(await metrics.registry.getSingleMetricAsString('lockwarden_lab_single_process')).toContain(
        'lockwarden_lab_single_process 1',
      );
      await release(fixture.env.client, held.lease);
      await waitFor(
        'waiter holding',
        async () => (await stateOf(fixture.env.client, waiter.workflowId)).phase === 'holding',
      );
      await release(fixture.env.client, (await stateOf(fixture.env.client, waiter.workflowId)).lease!);
    });
  });
});
