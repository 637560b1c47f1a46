// Committed histories replayed: today's with today's code, each release's with its tag's code.
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { RELEASE_010, RELEASE_020, releaseBundle } from './support/releases';
import { SCENARIOS } from './support/scenarios';
import { quietBundlerLogger, workflowBundle } from './support/temporalFixture';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { WORKFLOWS_PATH } from '../worker/createWorker';

const HISTORIES = path.join(__dirname, 'histories');
const RELEASED_010 = path.join(HISTORIES, '0.1.0');
const RELEASED_020 = path.join(HISTORIES, '0.2.0');

const jsonNames = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.replace(/\.json$/, ''))
    .sort();
const read = (dir: string, name: string): unknown =>
  JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'));

// Every committed history (see histories/README.md) replays with the code of the version that wrote it.
const current = jsonNames(HISTORIES);
const released010 = jsonNames(RELEASED_010);
const released020 = jsonNames(RELEASED_020);

describe('replay of committed histories', () => {
  it('has a committed history for every history a scenario records, and no other', () => {
    expect(current).toEqual(SCENARIOS.flatMap((s) => s.histories).sort());
  });

  it.each(current)('replays %s with the current workflow code', async (name) => {
    await expect(
      Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, read(HISTORIES, name), name),
    ).resolves.toBeUndefined();
  });
});

// Traces on: Temporal's OpenTelemetry plugin's workflow interceptors and lockwarden's own spans run in
// the sandbox, and change no command (temporal/tracing.ts).
describe('replay with tracing on', () => {
  let traced: WorkflowBundleWithSourceMap;
  const exporter = new InMemorySpanExporter();
  const plugin = new OpenTelemetryPlugin({
    resource: new Resource({ 'service.name': 'replay' }),
    spanProcessor: new SimpleSpanProcessor(exporter),
  });
  beforeAll(async () => {
    traced = await bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      plugins: [plugin],
      logger: quietBundlerLogger,
    });
  }, 120_000);

  it.each(current)('replays %s with the plugin installed, exporting nothing again', async (name) => {
    await expect(
      Worker.runReplayHistory({ workflowBundle: traced, plugins: [plugin] }, read(HISTORIES, name), name),
    ).resolves.toBeUndefined();
    // Spans of a replayed workflow were exported when it ran; a replay sends none.
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

// The one version boundary is a Worker Deployment version: 0.1.0's sessions run to their end on
// 0.1.0's workers (docs/versioning.md), so the current code has no branch for them.
describe("0.1.0's histories, at the version boundary", () => {
  let bundle010: WorkflowBundleWithSourceMap;
  let dispose = () => {};
  beforeAll(async () => {
    ({ bundle: bundle010, dispose } = await releaseBundle(RELEASE_010));
  });
  afterAll(() => dispose());

  it.each(released010)('replays %s with the 0.1.0 workflow code that serves it', async (name) => {
    await expect(
      Worker.runReplayHistory({ workflowBundle: bundle010 }, read(RELEASED_010, name), name),
    ).resolves.toBeUndefined();
  });

  it('the current code does not take over a 0.1.0 session: its replay fails, and the session waits for a 0.1.0 worker', async () => {
    const sessions = released010.filter((name) => name.startsWith('session-'));
    expect(sessions.length).toBeGreaterThan(10);
    for (const name of sessions)
      await expect(
        Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, read(RELEASED_010, name), name),
      ).rejects.toThrow(/DeterminismViolation|another lockwarden version|[Nn]ondeterminism/);
  });
});

// 0.2.0's sessions are pinned to 0.2.0's Worker Deployment version: whatever the current code becomes,
// they replay with the code of the v0.2.0 tag.
describe("0.2.0's histories, with the v0.2.0 code that serves them", () => {
  let bundle020: WorkflowBundleWithSourceMap;
  let dispose = () => {};
  beforeAll(async () => {
    ({ bundle: bundle020, dispose } = await releaseBundle(RELEASE_020));
  });
  afterAll(() => dispose());

  it('holds every history 0.2.0 released', () => {
    expect(released020.length).toBeGreaterThan(20);
  });

  it.each(released020)('replays %s with the 0.2.0 workflow code', async (name) => {
    await expect(
      Worker.runReplayHistory({ workflowBundle: bundle020 }, read(RELEASED_020, name), name),
    ).resolves.toBeUndefined();
  });
});

describe('replay as a guard', () => {
  it('fails replay when acquireLock changes its commands', async () => {
    const drifted = await bundleWorkflowCode({
      workflowsPath: require.resolve('./support/driftedWorkflows'),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    });
    const history = read(HISTORIES, 'session-fast-path-hold-release');
    await expect(Worker.runReplayHistory({ workflowBundle: drifted }, history)).rejects.toThrow(
      DeterminismViolationError,
    );
  });
});
