import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { RETIRED_HISTORIES, SCENARIOS } from './support/scenarios';
import { workflowBundle } from './support/temporalFixture';

const HISTORIES = path.join(__dirname, 'histories');

// Every committed history (see histories/README.md) replays with today's workflow code.
const committed = fs
  .readdirSync(HISTORIES)
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.replace(/\.json$/, ''))
  .sort();

describe('replay of committed histories', () => {
  it('has a committed history for every history a scenario records, and none that no scenario records but the retired', () => {
    const declared = SCENARIOS.flatMap((s) => s.histories);
    expect(declared.filter((name) => name in RETIRED_HISTORIES)).toEqual([]);
    expect(committed).toEqual([...declared, ...Object.keys(RETIRED_HISTORIES)].sort());
  });

  it.each(committed)('replays %s with the current workflow code', async (name) => {
    const history: unknown = JSON.parse(fs.readFileSync(path.join(HISTORIES, `${name}.json`), 'utf8'));
    await expect(
      Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, name),
    ).resolves.toBeUndefined();
  });
});

describe('replay as a guard', () => {
  it('fails replay when acquireLock changes its commands without patched()', async () => {
    const drifted = await bundleWorkflowCode({
      workflowsPath: require.resolve('./support/driftedWorkflows'),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    });
    const history: unknown = JSON.parse(
      fs.readFileSync(path.join(HISTORIES, 'session-fast-path-hold-release.json'), 'utf8'),
    );
    await expect(Worker.runReplayHistory({ workflowBundle: drifted }, history)).rejects.toThrow(
      DeterminismViolationError,
    );
  });
});
