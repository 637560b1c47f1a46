import type { WorkflowExecutionInfo } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { acquisitionWorkflowId } from '../policy/constants';
import { LockwardenPlugin } from '../worker/lockwardenPlugin';
import type { ExportActivities, nightlyExport } from './support/userWorkflows';
import { sessionFixture, silentLog, withWorker } from './support/temporalFixture';
import { unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';

// lockwarden inside a user's worker (the plugin), and beside it (a separate lockwarden worker).
const USER_WORKFLOWS = require.resolve('./support/userWorkflows');

describe('lockwarden from your own worker', () => {
  const fixture = sessionFixture();

  // The user's activity: records what it wrote, with which token, and when its work ran (it takes a
  // while, so two holders at once would show as overlapping intervals).
  type Written = { batch: string; token: string; from?: number; to?: number };
  const exporter = (written: Written[], workMs = 0): ExportActivities => ({
    async exportBatch({ token, batch }) {
      const from = Date.now();
      await new Promise((resolve) => setTimeout(resolve, workMs));
      written.push(workMs ? { batch, token, from, to: Date.now() } : { batch, token });
      return `batch ${batch} written with token ${token}`;
    },
  });

  // The sessions of `key` in Temporal's visibility, once it lists `count` of them (it lags a little).
  const sessionsOf = async (key: string, count: number) => {
    let sessions: WorkflowExecutionInfo[] = [];
    await waitFor(`${count} session(s) of ${key} listed`, async () => {
      sessions = [];
      const query = `WorkflowType = 'acquireLock' AND LockKey = '${key}'`;
      for await (const execution of fixture.env.client.workflow.list({ query })) sessions.push(execution);
      return sessions.length === count;
    });
    return sessions;
  };

  const exportOn = (taskQueue: string, key: string, batch: string, lockwardenTaskQueue?: string) =>
    fixture.env.client.workflow.execute<typeof nightlyExport>('nightlyExport', {
      taskQueue,
      workflowId: unique(`export-${batch}`),
      args: [{ key, batch, lockwardenTaskQueue }],
    });

  it("runs the sessions in the user's worker through the plugin, beside the user's workflows and activities", async () => {
    const taskQueue = unique('user');
    const written: Written[] = [];
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
      activities: exporter(written, 300),
      plugins: [plugin],
    });
    const key = unique('billing/nightly-export');
    const results = await worker.runUntil(
      Promise.all([exportOn(taskQueue, key, 'a'), exportOn(taskQueue, key, 'b')]),
    );
    // One at a time: the work under token 2 began after the work under token 1 ended, each with the
    // token the lock service issued it.
    const tokens = results.map((r) => BigInt(r.token)).sort((x, y) => (x < y ? -1 : 1));
    expect(tokens).toEqual([1n, 2n]);
    const [first, second] = [...written].sort((x, y) => x.from! - y.from!);
    expect([first!.token, second!.token]).toEqual(['1', '2']);
    expect(second!.from).toBeGreaterThanOrEqual(first!.to!);
    expect(results.map((r) => r.receipt)).toEqual(
      expect.arrayContaining(
        ['batch a written with token', 'batch b written with token'].map(expect.stringContaining),
      ),
    );
    expect(await fixture.locks.inspect(key)).toMatchObject({ holder: null, lastToken: '2', waiters: [] });
    // The sessions ran on the user's own task queue, and the plugin's metrics saw both acquisitions.
    expect((await sessionsOf(key, 2)).map((s) => s.taskQueue)).toEqual([taskQueue, taskQueue]);
    const acquired = (await plugin.metrics.acquisitionWait.get()).values.find(
      (v) => v.metricName === 'lockwarden_acquisition_wait_seconds_count' && v.labels.outcome === 'acquired',
    );
    expect(acquired?.value).toBe(2);
  });

  it('runs the sessions on a separate lockwarden worker when withLock names its task queue', async () => {
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, escalations: fixture.escalations },
      async (lockwardenQueue) => {
        const userQueue = unique('user');
        const written: Written[] = [];
        // The user's worker has no lockwarden plugin and no lockwarden activities.
        const worker = await Worker.create({
          connection: fixture.env.nativeConnection,
          taskQueue: userQueue,
          workflowsPath: USER_WORKFLOWS,
          activities: exporter(written),
        });
        const key = unique('reports');
        const result = await worker.runUntil(exportOn(userQueue, key, 'c', lockwardenQueue));
        expect(result.token).toBe('1');
        expect(written).toEqual([{ batch: 'c', token: '1' }]);
        const sessions = await sessionsOf(key, 1);
        expect(sessions.map((s) => s.taskQueue)).toEqual([lockwardenQueue]);
        expect(sessions[0]!.workflowId.startsWith(acquisitionWorkflowId(key, 'export-c'))).toBe(true);
        expect(await fixture.locks.inspect(key)).toMatchObject({ holder: null, lastToken: '1' });
      },
    );
  });
});
