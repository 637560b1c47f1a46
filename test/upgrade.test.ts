import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Worker, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createSessionWaker } from '../activities/sessionSignals';
import { awaitLeaseOf, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import { LOCKWARDEN_VERSION } from '../policy/constants';
import { createLockwardenWorker } from '../worker/createWorker';
import { RELEASE_010, release010Worker, releaseBundle } from './support/releases';
import { sessionFixture, silentLog, unique, workflowBundle } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// The upgrade docs/versioning.md tells an operator to make, done on the dev server:
// workers of the 0.1.0 release and of the current code side by side in one Worker Deployment, each
// a version of it; sessions stay on the version that started them until they end.

const RELEASE = RELEASE_010;

const { VersioningBehavior } = temporal.api.enums.v1;

/** Every workflow task a session's run completed: when (server clock, ms) and on which Build ID. */
async function tasksOf(client: Client, workflowId: string): Promise<{ at: number; buildId: string }[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const done = e.workflowTaskCompletedEventAttributes;
    const at = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
    return done ? [{ at, buildId: done.deploymentVersion?.buildId ?? '(unversioned)' }] : [];
  });
}

/** The Build IDs a session's workflow tasks ran on. */
const buildIdsOf = async (client: Client, workflowId: string) =>
  new Set((await tasksOf(client, workflowId)).map((t) => t.buildId));

describe('upgrading from 0.1.0 with Worker Versioning', () => {
  const fixture = sessionFixture();
  let oldBundle: WorkflowBundleWithSourceMap;
  let currentBundle: WorkflowBundleWithSourceMap;
  let disposeRelease = () => {};
  beforeAll(async () => {
    ({ bundle: oldBundle, dispose: disposeRelease } = await releaseBundle(RELEASE_010));
    currentBundle = await workflowBundle();
  });
  afterAll(() => disposeRelease());

  /** One upgrade's setting: a deployment and a task queue of its own, and what an operator does on it. */
  function upgradeSetting() {
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
    const key = unique('upgraded');
    return {
      client,
      deploymentName,
      taskQueue,
      key,
      request: (requester: string) => ({ key, requester, ttlMs: 30_000 }),
      /** A worker of the current code: a version of the deployment, or unversioned. */
      worker: (buildId: string | null): Promise<Worker> =>
        createLockwardenWorker({
          connection: nativeConnection,
          namespace,
          taskQueue,
          deps,
          workflows: { workflowBundle: currentBundle },
          deployment: buildId ? { name: deploymentName, buildId } : null,
        }),
      /** A worker of 0.1.0, with 0.1.0's workflow code and activity names. */
      worker010: (buildId: string | null): Promise<Worker> =>
        release010Worker({
          connection: nativeConnection,
          namespace,
          taskQueue,
          deps,
          workflowBundle: oldBundle,
          deployment: buildId ? { name: deploymentName, buildId } : null,
        }),
      /** Until `session` waits at `place` in the key's queue. */
      queued: (session: { workflowId: string }, place: number) =>
        waitFor(`${session.workflowId} at place ${place}`, async () => {
          return (await stateOf(client, session.workflowId)).place === place;
        }),
      /** `from` releases the key; `to`, if named, is handed the lease. */
      handOver: async (from: string, to?: { workflowId: string }) => {
        expect(await release(client, { key, holder: from })).toMatchObject({ ok: true });
        if (to) expect(await awaitLeaseOf(client, to.workflowId)).toMatchObject({ status: 'acquired' });
      },
      /** Until the version's worker has polled, the server does not know it. */
      known: (buildId: string) =>
        waitFor(`${deploymentName}:${buildId} known to the server`, async () => {
          await client.workflowService.describeWorkerDeploymentVersion({
            namespace,
            deploymentVersion: { deploymentName, buildId },
          });
          return true;
        }),
      /** What the operator runs: `temporal worker deployment set-current-version`. */
      makeCurrent: (buildId: string) =>
        waitFor(`${deploymentName}:${buildId} as the current version`, async () => {
          await client.workflowService.setWorkerDeploymentCurrentVersion({
            namespace,
            deploymentName,
            buildId,
            identity: 'upgrade test',
          });
          return true;
        }),
    };
  }

  /** Runs `fn` while every worker polls; shuts them all down after. */
  async function running<T>(workers: Worker[], fn: () => Promise<T>): Promise<T> {
    const runs = workers.map((w) => w.run());
    try {
      return await fn();
    } finally {
      for (const w of workers) w.shutdown();
      await Promise.all(runs);
    }
  }

  const expectReleased = async (client: Client, ...workflowIds: string[]) => {
    for (const id of workflowIds)
      expect(await client.workflow.getHandle(id).result()).toMatchObject({ status: 'released' });
  };

  it('0.1.0 sessions keep running and end on the 0.1.0 worker, while sessions started after the switch run on the current code', async () => {
    const up = upgradeSetting();
    const { client } = up;
    const oldWorker = await up.worker010(RELEASE.buildId);
    const newWorker = await up.worker(LOCKWARDEN_VERSION);
    const oldRun = oldWorker.run();
    let newRun: Promise<void> | undefined;
    try {
      await up.makeCurrent(RELEASE.buildId);
      // On 0.1.0: one session holds the key, one waits in its queue.
      const holder = await startAcquisition(client, up.request('holder-010'), { taskQueue: up.taskQueue });
      expect(await awaitLeaseOf(client, holder.workflowId)).toMatchObject({ status: 'acquired' });
      const waiter = await startAcquisition(client, up.request('waiter-010'), { taskQueue: up.taskQueue });
      await up.queued(waiter, 1);

      // Deploy the current code beside it and make it current: new sessions start there.
      newRun = newWorker.run();
      await up.makeCurrent(LOCKWARDEN_VERSION);
      const switchedAt = Date.now();
      const newcomer = await startAcquisition(client, up.request('newcomer'), { taskQueue: up.taskQueue });
      await up.queued(newcomer, 2);

      // The key is handed from the 0.1.0 holder to the 0.1.0 waiter, then to the newcomer.
      await up.handOver('holder-010', waiter);
      await up.handOver('waiter-010', newcomer);
      await up.handOver('newcomer');
      await expectReleased(client, holder.workflowId, waiter.workflowId, newcomer.workflowId);

      // Each session ran every one of its workflow tasks on the version that started it.
      // Both 0.1.0 sessions ran tasks after the switch (the release, the hand-off), and on 0.1.0.
      for (const s of [holder, waiter]) {
        const tasks = await tasksOf(client, s.workflowId);
        expect(tasks.filter((t) => t.at > switchedAt).length).toBeGreaterThan(0);
        expect(new Set(tasks.map((t) => t.buildId))).toEqual(new Set([RELEASE.buildId]));
      }
      expect(await buildIdsOf(client, newcomer.workflowId)).toEqual(new Set([LOCKWARDEN_VERSION]));
      const described = await client.workflow.getHandle(waiter.workflowId).describe();
      expect(described.raw.workflowExecutionInfo?.versioningInfo).toMatchObject({
        behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
        deploymentVersion: { deploymentName: up.deploymentName, buildId: RELEASE.buildId },
      });

      // Retiring 0.1.0: no session of it is left running (what the operator checks before shutting it down).
      const query = `TemporalWorkerDeploymentVersion = "${up.deploymentName}:${RELEASE.buildId}" AND ExecutionStatus = "Running"`;
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

  it('from an unversioned 0.1.0 worker: new sessions pinned to the current code until the old ones end, no session moved', async () => {
    const up = upgradeSetting();
    const { client } = up;
    const placement = { taskQueue: up.taskQueue };
    const pinned = {
      ...placement,
      pinTo: { deploymentName: up.deploymentName, buildId: LOCKWARDEN_VERSION },
    };
    const workers = [await up.worker010(null), await up.worker(LOCKWARDEN_VERSION)];
    await running(workers, async () => {
      // 0.1.0 as it shipped: unversioned. Its session holds the key.
      const old = await startAcquisition(client, up.request('old'), placement);
      expect(await awaitLeaseOf(client, old.workflowId)).toMatchObject({ status: 'acquired' });
      // The new version is deployed but not current; clients pin their new sessions to it.
      await up.known(LOCKWARDEN_VERSION);
      const early = await startAcquisition(client, up.request('early'), pinned);
      await up.queued(early, 1);
      await up.handOver('old', early);
      await expectReleased(client, old.workflowId);
      // No unversioned session is left: the new version becomes current, and pins are no longer needed.
      await up.makeCurrent(LOCKWARDEN_VERSION);
      const late = await startAcquisition(client, up.request('late'), placement);
      await up.queued(late, 1);
      await up.handOver('early', late);
      await up.handOver('late');
      await expectReleased(client, early.workflowId, late.workflowId);

      // The 0.1.0 session ran on the unversioned worker throughout; the others on the current code.
      expect(await buildIdsOf(client, old.workflowId)).toEqual(new Set(['(unversioned)']));
      for (const s of [early, late])
        expect(await buildIdsOf(client, s.workflowId)).toEqual(new Set([LOCKWARDEN_VERSION]));
    });
  });
});
