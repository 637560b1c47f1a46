import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { release, startAcquisition, stateOf } from '../client/lockwardenClient';
import { SqliteLockService } from '../locks/sqliteLockService';
import { lockReleased } from '../temporal/messages';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { sessionFixture, TEMPORAL_ADDRESS } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// Found by the cluster's fault campaign: a session's retry decision (a local activity) was still
// running when its workflow task had to be completed, and a wake-up came in the next one. The
// session cancelled the decision in favour of the wake-up; the SDK's core had already taken its
// result, and failed the workflow task ("Invalid transition in state machine") on every replay from
// then on. The session, head of its queue, never tried again, and its ticket stalled the queue for
// an hour. Here: a worker whose first decision is slow dies after the task completes without it, a
// second worker replays the session, and the release's wake-up arrives.

/** How long the first worker's first decision runs: past the SDK's 8 s completion of the task. */
const SLOW_DECISION_MS = 9_000;

function startWorker(taskQueue: string, lockFile: string, slowPolicyMs = 0): Promise<ChildProcess> {
  const worker = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'support', 'pluginWorkerProcess.ts'), taskQueue, lockFile],
    {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS,
        ...(slowPolicyMs ? { LOCKWARDEN_TEST_SLOW_FIRST_POLICY_MS: String(slowPolicyMs) } : {}),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    worker.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve(worker);
    });
    worker.once('exit', (code) => reject(new Error(`worker exited before it was ready (code ${code})`)));
  });
}

describe('a wake-up while the retry decision runs across workflow tasks', () => {
  const fixture = sessionFixture();

  it('is acted on after a replay: the session takes the lock, and no workflow task fails', async () => {
    const { client } = fixture.env;
    const [taskQueue, lockFile, key] = [unique('tq'), freshSqlitePath(), unique('decide-across-tasks')];
    const locks = new SqliteLockService({ path: lockFile });
    const workers: ChildProcess[] = [];
    try {
      const held = await locks.tryAcquire({ key, requester: 'h', ttlMs: 120_000 });
      if (!held.granted) throw new Error('the key should be free');
      workers.push(await startWorker(taskQueue, lockFile, SLOW_DECISION_MS));
      const session = await startAcquisition(client, { key, requester: 'w', ttlMs: 30_000 }, { taskQueue });
      const handle = client.workflow.getHandle(session.workflowId);
      const events = async () => (await handle.fetchHistory()).events ?? [];
      // The SDK completed the first task without the decision and started the next one.
      await waitFor(
        'the first task completed with the decision still running',
        async () => (await events()).filter((e) => e.workflowTaskStartedEventAttributes).length >= 2,
      );
      workers[0]!.kill('SIGKILL');
      expect((await locks.release(held.lease)).ok).toBe(true);
      workers.push(await startWorker(taskQueue, lockFile));
      await handle.signal(lockReleased);
      // The dead worker's task times out (10 s); the second worker replays the session and goes on.
      await waitFor(
        'the session holds the lock',
        async () => (await stateOf(client, handle.workflowId)).phase === 'holding',
        40_000,
      );
      const failedTasks = (await events()).filter((e) => e.workflowTaskFailedEventAttributes);
      expect(failedTasks.map((e) => e.workflowTaskFailedEventAttributes?.failure?.message)).toEqual([]);
      expect((await release(client, { key, holder: 'w' })).ok).toBe(true);
    } finally {
      for (const worker of workers) worker.kill('SIGKILL');
      await locks.close();
    }
  }, 90_000);
});
