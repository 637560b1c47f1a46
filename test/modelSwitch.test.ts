// The operators' kill switch outside the model path (seed 003, red flag 7): `lockctl model off`
// turns model decisions off for every worker of the namespace within a few seconds, without a
// deploy; `on` restores them. With a model worker running, through the real CLI, in metrics and
// in `lockctl state` and `list`.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import path from 'node:path';
import { promisify } from 'node:util';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { createAnthropicDrafter } from '../activities/anthropicDrafter';
import { NO_EVIDENCE } from '../policy/postmortem/patchEvidence';
import { buildTimeline } from '../policy/postmortem/timeline';
import type { postmortemBriefing } from '../workflows/postmortemBriefing';
import { GATES, PAUSED_PAST_LEASE } from './support/incidents';
import { createMetrics } from '../activities/metrics';
import { acquire, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import { VALID_DECISION } from '../devkit/decisionInputs';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import type { RecordedDecision } from '../policy/sessionModel/sessionTypes';
import { createModelWorker } from '../worker/modelWorker';
import { FAKE_MODEL } from './support/runScenario';
import {
  sessionFixture,
  silentLog,
  TEMPORAL_ADDRESS,
  temporalCli,
  unique,
  withWorker,
} from './support/temporalFixture';
import { waitFor } from './support/waitFor';

const ROOT = path.join(__dirname, '..');
const run = promisify(execFile);

// The switch is namespace-wide by design: this suite turns it in a namespace of its own, so suites
// running beside it in the default namespace keep their model.
const NAMESPACE = 'lockwarden-switch-test';

async function lockctl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const global = ['--address', TEMPORAL_ADDRESS, '--namespace', NAMESPACE];
  return run(process.execPath, ['--import', 'tsx', 'client/lockctl.ts', ...global, ...args], { cwd: ROOT });
}

/** The namespace and lockwarden's search attributes in it (scripts/search-attributes.txt), idempotently. */
function createNamespace(): void {
  const already = (run: () => void) => {
    try {
      run();
    } catch (error) {
      if (!/already (exists|registered)/i.test(String(error))) throw error;
    }
  };
  already(() => temporalCli('operator', 'namespace', 'create', '--namespace', NAMESPACE));
  const wanted = fs.readFileSync(path.join(ROOT, 'scripts', 'search-attributes.txt'), 'utf8');
  for (const line of wanted.split('\n').filter((l) => l && !l.startsWith('#'))) {
    const [name, type] = line.split('=') as [string, string];
    already(() =>
      temporalCli(
        'operator',
        'search-attribute',
        'create',
        '--namespace',
        NAMESPACE,
        '--name',
        name,
        '--type',
        type,
      ),
    );
  }
}

describe('the model kill switch', () => {
  const fixture = sessionFixture();
  const model = new FakeMessagesApi();
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    await model.start();
    createNamespace();
    const client = new Client({ connection: fixture.env.connection, namespace: NAMESPACE });
    env = {
      client,
      nativeConnection: fixture.env.nativeConnection,
      namespace: NAMESPACE,
    } as TestWorkflowEnvironment;
    // A fresh namespace takes a moment to reach every service of the server.
    await waitFor('the namespace', async () => {
      try {
        await client.workflow.count('WorkflowType = "acquireLock"');
        return true;
      } catch {
        return false;
      }
    });
  });
  afterAll(async () => {
    await model.stop();
    // Never leave the namespace with the model off for the suites after this one.
    await lockctl('model', 'on', '--operator', 'test', '--reason', 'cleanup').catch(() => undefined);
  });

  it('turns model decisions off for every worker within seconds, and back on', async () => {
    model.answer(...Array.from({ length: 400 }, () => ({ kind: 'tool' as const, input: VALID_DECISION })));
    const metrics = createMetrics();
    const modelTaskQueue = unique('model-worker');
    const modelWorker = await createModelWorker({
      connection: env.nativeConnection,
      namespace: NAMESPACE,
      taskQueue: modelTaskQueue,
      decider: createAnthropicDecider({ ...FAKE_MODEL, baseURL: model.baseURL }),
      drafter: createAnthropicDrafter({ ...FAKE_MODEL, baseURL: model.baseURL }),
      log: silentLog,
      metrics,
      client: env.client,
    });
    await modelWorker.runUntil(
      withWorker(env, { locks: fixture.locks, log: silentLog, modelTaskQueue }, async (taskQueue) => {
        const key = unique('switched');
        const held = await acquire(env.client, { key, requester: 'holder' }, { taskQueue });
        // Backs off (no park): asks for a decision at every denial, about five a second.
        const waiter = await startAcquisition(
          env.client,
          {
            key,
            requester: 'waiter',
            wakeOnRelease: false,
            budget: { baseBackoffMs: 100, maxBackoffMs: 200, maxRetries: 1_000, maxTotalWaitMs: 600_000 },
          },
          { taskQueue },
        );
        const decisions = async () => (await stateOf(env.client, waiter.workflowId)).decisions;
        const last = async (): Promise<RecordedDecision | undefined> => (await decisions()).at(-1);
        await waitFor('a model decision', async () => (await last())?.provider === 'anthropic');

        const off = await lockctl(
          'model',
          'off',
          '--operator',
          'ops',
          '--reason',
          'the model misbehaves',
          '--task-queue',
          taskQueue,
        );
        expect(JSON.parse(off.stdout)).toMatchObject({
          model: 'off',
          operator: 'ops',
          reason: 'the model misbehaves',
          changed: true,
        });
        await waitFor(
          'the policy decides',
          async () => (await last())?.fallbackCause === 'model-switched-off',
          10_000,
        );
        const asked = model.requests.length;
        const before = (await decisions()).length;
        await waitFor(
          'three more decisions',
          async () => (await decisions()).length >= Math.min(10, before + 3),
        );
        expect(model.requests.length).toBe(asked);
        expect(await last()).toMatchObject({ provider: 'policy', fallbackCause: 'model-switched-off' });
        expect(await metrics.registry.getSingleMetricAsString('lockwarden_model_switched_off')).toContain(
          'lockwarden_model_switched_off 1',
        );
        expect(await metrics.registry.getSingleMetricAsString('lockwarden_decisions_total')).toContain(
          'fallback_cause="model-switched-off"',
        );
        const state = JSON.parse((await lockctl('state', waiter.workflowId)).stdout);
        expect(state.modelSwitch).toMatchObject({
          model: 'off',
          operator: 'ops',
          reason: 'the model misbehaves',
        });
        const listed = await lockctl('list', '--key', key);
        expect(listed.stderr).toMatch(
          /model decisions and drafts are off \(lockctl model off by ops since .+: the model misbehaves\); the policy decides/,
        );
        expect(JSON.parse((await lockctl('model', 'status')).stdout)).toMatchObject({ model: 'off' });
        // Drafts come from the template while the model is off: no request reaches the model.
        const facts = {
          firm: 'Acme',
          stakeholder: 'Dana Lee',
          job: 'export',
          timeline: buildTimeline(key, PAUSED_PAST_LEASE),
          evidence: NO_EVIDENCE,
          gates: GATES,
        };
        const briefed = await env.client.workflow.execute<typeof postmortemBriefing>('postmortemBriefing', {
          taskQueue,
          workflowId: unique('postmortem'),
          args: [facts, { modelTaskQueue }],
        });
        expect(briefed).toMatchObject({ lane: 'template', fallbackCause: 'model-switched-off' });
        expect(model.requests.length).toBe(asked);

        const on = await lockctl('model', 'on', '--operator', 'ops', '--reason', 'fixed');
        expect(JSON.parse(on.stdout)).toEqual({ model: 'on', changed: true });
        expect(
          JSON.parse((await lockctl('model', 'on', '--operator', 'ops', '--reason', 'again')).stdout),
        ).toEqual({
          model: 'on',
          changed: false,
        });
        await waitFor(
          'the model decides again',
          async () => (await last())?.provider === 'anthropic',
          10_000,
        );
        expect(model.requests.length).toBeGreaterThan(asked);
        expect(await metrics.registry.getSingleMetricAsString('lockwarden_model_switched_off')).toContain(
          'lockwarden_model_switched_off 0',
        );
        await env.client.workflow.getHandle(waiter.workflowId).terminate('the test is done');
        await release(env.client, held.lease);
      }),
    );
  });

  it('refuses a change without an operator and a reason, and an unknown action', async () => {
    await expect(lockctl('model', 'off', '--operator', 'ops')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('reason'),
    });
    await expect(lockctl('model', 'sideways')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('use off, on or status'),
    });
  });
});
