import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, type Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createSessionWaker } from '../activities/sessionSignals';
import { awaitLeaseOf, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import { quietBundlerLogger } from '../devkit/temporal';
import { LOCKWARDEN_VERSION } from '../policy/constants';
import { createLockwardenWorker } from '../worker/createWorker';
import { sessionFixture, silentLog, unique, workflowBundle } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// The upgrade the README's Versioning section tells an operator to make, done on the dev server:
// workers of the 0.1.0 release and of the current code side by side in one Worker Deployment, each
// a version of it; sessions stay on the version that started them until they end.

const ROOT = path.join(__dirname, '..');
/** The 0.1.0 release: its tag, or the commit the tag names where a clone has no tags. */
const RELEASE = { tag: 'v0.1.0', commit: 'f00872bb5dfbd86586d2899d34814bdd8e53413f', buildId: '0.1.0' };

/** Extracts the release's workflow code (and the modules it imports) from git into a temporary tree. */
function checkOutRelease(): string {
  const rev = [RELEASE.tag, RELEASE.commit].find((r) => {
    try {
      execFileSync('git', ['rev-parse', '--verify', '--quiet', `${r}^{commit}`], {
        cwd: ROOT,
        stdio: 'ignore',
      });
      return true;
    } catch {
      return false;
    }
  });
  if (!rev)
    throw new Error(
      `neither ${RELEASE.tag} nor ${RELEASE.commit} is in this clone: fetch tags or unshallow it`,
    );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-0.1.0-'));
  const archive = execFileSync(
    'git',
    ['archive', rev, 'workflows', 'policy', 'temporal', 'activities', 'locks'],
    {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  // The release's code resolves its packages (the SDK, zod) from this checkout's node_modules.
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

const { VersioningBehavior } = temporal.api.enums.v1;

/** The Build ID of every workflow task a session's run completed, in order. */
async function buildIdsOf(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const done = e.workflowTaskCompletedEventAttributes;
    return done ? [done.deploymentVersion?.buildId ?? '(unversioned)'] : [];
  });
}

describe('upgrading from 0.1.0 with Worker Versioning', () => {
  const fixture = sessionFixture();
  let release010: string;
  beforeAll(() => {
    release010 = checkOutRelease();
  });
  afterAll(() => fs.rmSync(release010, { recursive: true, force: true }));

  it('0.1.0 sessions keep running and end on the 0.1.0 worker, while sessions started after the switch run on the current code', async () => {
    const { client, nativeConnection } = fixture.env;
    const namespace = fixture.env.namespace ?? 'default';
    const deploymentName = unique('lockwarden');
    const taskQueue = unique('upgrade');
    const deps = {
      locks: fixture.locks,
      log: silentLog,
      escalations: fixture.escalations,
      waker: createSessionWaker(client, silentLog),
    };
    const versionedWorker = (bundle: WorkflowBundleWithSourceMap, buildId: string): Promise<Worker> =>
      createLockwardenWorker({
        connection: nativeConnection,
        namespace,
        taskQueue,
        deps,
        workflows: { workflowBundle: bundle },
        deployment: { name: deploymentName, buildId },
      });
    // What the operator runs: `temporal worker deployment set-current-version`. The version is known
    // to the server once its worker has polled; until then the call is refused.
    const makeCurrent = (buildId: string) =>
      waitFor(`${deploymentName}:${buildId} as the current version`, async () => {
        try {
          await client.workflowService.setWorkerDeploymentCurrentVersion({
            namespace,
            deploymentName,
            buildId,
            identity: 'upgrade test',
          });
          return true;
        } catch {
          return false;
        }
      });

    const oldBundle = await bundleWorkflowCode({
      workflowsPath: path.join(release010, 'workflows', 'index.ts'),
      logger: quietBundlerLogger,
    });
    const oldWorker = await versionedWorker(oldBundle, RELEASE.buildId);
    const oldRun = oldWorker.run();
    const newWorker = await versionedWorker(await workflowBundle(), LOCKWARDEN_VERSION);
    let newRun: Promise<void> | undefined;
    try {
      await makeCurrent(RELEASE.buildId);
      // On 0.1.0: one session holds the key, one waits in its queue.
      const key = unique('upgraded');
      const request = (requester: string) => ({ key, requester, ttlMs: 30_000 });
      const holder = await startAcquisition(client, request('holder-010'), { taskQueue });
      expect(await awaitLeaseOf(client, holder.workflowId)).toMatchObject({ status: 'acquired' });
      const waiter = await startAcquisition(client, request('waiter-010'), { taskQueue });
      await waitFor(
        'the 0.1.0 waiter queued',
        async () => (await stateOf(client, waiter.workflowId)).place === 1,
      );

      // Deploy the current code beside it and make it current: new sessions start there.
      newRun = newWorker.run();
      await makeCurrent(LOCKWARDEN_VERSION);
      const newcomer = await startAcquisition(client, request('newcomer'), { taskQueue });
      await waitFor(
        'the newcomer queued',
        async () => (await stateOf(client, newcomer.workflowId)).place === 2,
      );

      // The key is handed from the 0.1.0 holder to the 0.1.0 waiter, then to the newcomer.
      expect(await release(client, { key, holder: 'holder-010' })).toMatchObject({ ok: true });
      expect(await awaitLeaseOf(client, waiter.workflowId)).toMatchObject({ status: 'acquired' });
      expect(await release(client, { key, holder: 'waiter-010' })).toMatchObject({ ok: true });
      expect(await awaitLeaseOf(client, newcomer.workflowId)).toMatchObject({ status: 'acquired' });
      expect(await release(client, { key, holder: 'newcomer' })).toMatchObject({ ok: true });
      for (const s of [holder, waiter, newcomer])
        expect(await client.workflow.getHandle(s.workflowId).result()).toMatchObject({ status: 'released' });

      // Each session ran every one of its workflow tasks on the version that started it.
      for (const s of [holder, waiter]) {
        const ids = await buildIdsOf(client, s.workflowId);
        expect(ids.length).toBeGreaterThan(2);
        expect(new Set(ids)).toEqual(new Set([RELEASE.buildId]));
      }
      expect(new Set(await buildIdsOf(client, newcomer.workflowId))).toEqual(new Set([LOCKWARDEN_VERSION]));
      const described = await client.workflow.getHandle(waiter.workflowId).describe();
      expect(described.raw.workflowExecutionInfo?.versioningInfo).toMatchObject({
        behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
        deploymentVersion: { deploymentName, buildId: RELEASE.buildId },
      });

      // Retiring 0.1.0: no session of it is left running (what the operator checks before shutting it down).
      const query = `TemporalWorkerDeploymentVersion = "${deploymentName}:${RELEASE.buildId}" AND ExecutionStatus = "Running"`;
      await waitFor('no running 0.1.0 session', async () => (await client.workflow.count(query)).count === 0);
    } finally {
      oldWorker.shutdown();
      await oldRun;
      if (newRun) {
        newWorker.shutdown();
        await newRun;
      }
    }
  });
});
