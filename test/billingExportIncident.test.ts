import Database from 'better-sqlite3';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { acquire, release } from '../client/lockwardenClient';
import { SqliteFencedResource } from '../locks/sqliteFencedResource';
import { SqliteLockService } from '../locks/sqliteLockService';
import { activitySummaries } from './support/history';
import { connectTestEnv, silentLog, withWorker } from './support/temporalFixture';
import { startWorkerProcess, stopWorkerProcess } from './support/workerProcess';
import { freshSqlitePath, unique } from './support/tempFiles';
import { waitFor } from './support/waitFor';

// The constructed incident of the boundary document: replica A holds the nightly export lock and is
// paused past its lease (its worker process is stopped with SIGSTOP, as a long GC pause or a frozen
// VM would); replica B takes the lock and writes its invoice batch; A wakes up, tries to renew and to
// write with its old token. With fencing, exactly one batch exists and A's history says why.

describe('the billing-export incident, replayed', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await connectTestEnv();
  });
  afterAll(() => env?.teardown());

  it('refuses the paused replica: its renewal is denied, its stale write is refused, one invoice batch exists', async () => {
    const lockFile = freshSqlitePath();
    const key = unique('billing/nightly-export');
    const locks = new SqliteLockService({ path: lockFile });
    const invoices = new Database(freshSqlitePath());
    invoices.exec('CREATE TABLE invoice_batches (batch TEXT NOT NULL, token TEXT NOT NULL)');
    const fenced = new SqliteFencedResource(invoices);
    const writeBatch = (batch: string, token: string) =>
      fenced.write('invoices', token, (db) =>
        db.prepare('INSERT INTO invoice_batches VALUES (?, ?)').run(batch, token),
      );
    const queueA = unique('replica-a');
    const workerA = startWorkerProcess(lockFile, queueA);
    try {
      // 02:00 — replica A acquires the export lock (token n).
      const a = await acquire(
        env.client,
        { key, requester: 'replica-a', ttlMs: 2_000 },
        { taskQueue: queueA },
      );
      const tokenA = a.lease.token;

      // A's host freezes before the export finishes, and stays frozen past its lease.
      workerA.kill('SIGSTOP');
      await waitFor(
        "A's lease to expire on the service clock",
        async () => (await locks.inspect(key)).holder === null,
        15_000,
      );

      // Replica B acquires (token n+1) and writes its invoice batch through the fenced resource.
      await withWorker(env, { locks, log: silentLog }, async (queueB) => {
        const b = await acquire(
          env.client,
          { key, requester: 'replica-b', ttlMs: 30_000 },
          { taskQueue: queueB },
        );
        expect(BigInt(b.lease.token)).toBe(BigInt(tokenA) + 1n);
        expect(await writeBatch('batch-from-B', b.lease.token)).toMatchObject({ accepted: true });

        // A resumes: its session tries to renew with token n and is told the lease is lost.
        workerA.kill('SIGCONT');
        const outcomeA = await a.session.result();
        expect(outcomeA).toMatchObject({
          status: 'lease-lost',
          reason: expect.stringContaining(`token ${b.lease.token} for replica-b, not token ${tokenA}`),
        });
        // A's export code, unaware, writes with its old token: refused.
        expect(await writeBatch('batch-from-A', tokenA)).toEqual({
          accepted: false,
          newestToken: b.lease.token,
        });

        // The service still shows B, with its own token and deadline: A renewed nothing.
        expect(await locks.inspect(key)).toMatchObject({
          holder: 'replica-b',
          token: b.lease.token,
          leaseUntil: b.lease.leaseUntil,
        });
        expect(await release(env.client, b.lease)).toMatchObject({ ok: true });
      });

      expect(invoices.prepare('SELECT batch, token FROM invoice_batches').all()).toEqual([
        { batch: 'batch-from-B', token: String(BigInt(tokenA) + 1n) },
      ]);
      // The history shows why: the renewal with token n ended the hold as lease-lost.
      const history = await env.client.workflow.getHandle(a.session.workflowId).fetchHistory();
      expect(activitySummaries(history)).toContain(`renew token ${tokenA}`);
    } finally {
      workerA.kill('SIGCONT');
      await stopWorkerProcess(workerA, 'SIGTERM');
      invoices.close();
      await locks.close();
    }
  }, 90_000);
});
