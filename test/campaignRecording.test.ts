import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { journalingLocks, readJournals } from '../campaign/journal';
import { outcomesOfAll, runSession, runsPerSessionId } from '../campaign/sessions';
import { WorkerPool } from '../campaign/workerPool';
import { SqliteLockService } from '../locks/sqliteLockService';
import { sessionFixture, unique } from './support/temporalFixture';
import { freshSqlitePath } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';

// What the fault campaign records in a real run and hands to its checker: the lock service's
// journal, the sessions' outcomes and runs from Temporal, and the workers that crashed.

describe("the fault campaign's recordings", () => {
  const fixture = sessionFixture();

  it("journals every grant, renewal and release the lock service answers, and nothing it refused, on the service's clock; and each renewal sent", async () => {
    const file = freshSqlitePath().replace(/\.sqlite$/, '.jsonl');
    const locks = journalingLocks(new SqliteLockService({ path: freshSqlitePath() }), file);
    try {
      const a = await locks.tryAcquire({ key: 'k', requester: 'a', ttlMs: 5_000 });
      if (!a.granted) throw new Error('a was denied');
      const denied = await locks.tryAcquire({ key: 'k', requester: 'b', ttlMs: 5_000 });
      const renewed = await locks.renew({ key: 'k', holder: 'a', token: a.lease.token });
      const refused = await locks.renew({ key: 'k', holder: 'b', token: a.lease.token });
      const released = await locks.release({ key: 'k', holder: 'a', token: a.lease.token });
      expect([denied.granted, renewed.ok, refused.ok, released.ok]).toEqual([false, true, false, true]);

      const { entries, unreadable } = readJournals([file]);
      expect(unreadable).toEqual([]);
      const sent = (holder: string, id: string) => ({
        op: 'renew-sent',
        id,
        key: 'k',
        holder,
        token: a.lease.token,
        at: expect.any(Number),
      });
      const [first, second] = [`${process.pid}-1`, `${process.pid}-2`];
      expect(entries).toEqual([
        { op: 'grant', ...a.lease },
        sent('a', first),
        {
          op: 'renew',
          id: first,
          key: 'k',
          holder: 'a',
          token: a.lease.token,
          leaseUntil: renewed.ok && renewed.leaseUntil,
          at: renewed.serviceTime,
        },
        // The refused renewal was sent and answered: it changed nothing.
        sent('b', second),
        { op: 'renew-refused', id: second, at: refused.serviceTime },
        {
          op: 'release-sent',
          id: `${process.pid}-3`,
          key: 'k',
          holder: 'a',
          token: a.lease.token,
          at: expect.any(Number),
        },
        {
          op: 'release',
          id: `${process.pid}-3`,
          key: 'k',
          holder: 'a',
          token: a.lease.token,
          at: released.serviceTime,
        },
      ]);
    } finally {
      await locks.close();
    }
  });

  it('counts and names the journal lines it cannot read, and reads the rest', () => {
    const file = freshSqlitePath().replace(/\.sqlite$/, '.jsonl');
    const entry = { op: 'release', key: 'k', holder: 'a', token: '1', at: 5 };
    fs.writeFileSync(
      file,
      `${JSON.stringify(entry)}\n{"op":"grant","key":"k","hol\n${JSON.stringify(entry)}\n`,
    );
    const { entries, unreadable } = readJournals([file, `${file}.missing`]);
    expect(entries).toHaveLength(2);
    expect(unreadable).toEqual([`${path.basename(file)}:2`]);
  });

  it('counts a session it cannot start before its deadline as lost, instead of ending the campaign', async () => {
    // Nothing listens on port 1: every call fails at once, as it would with Temporal gone for good.
    const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
    const started = Date.now();
    const outcome = await runSession(
      client,
      unique('campaign/lost'),
      { key: 'k', requester: 'w', records: 1, ttlMs: 3_000, workMs: 10, proves: true },
      { taskQueue: unique('nobody'), deadline: started + 1_500 },
    );
    expect(outcome).toBe('lost');
    expect(outcomesOfAll(['a', 'b'], { a: 'wrote' })).toEqual({ a: 'wrote', b: 'lost' });
  });

  it("counts a lock session's runs from Temporal's visibility: an id run twice is seen twice", async () => {
    const workflowId = unique('lock/campaign-runs');
    for (let i = 0; i < 2; i++) {
      const handle = await fixture.env.client.workflow.start('acquireLock', {
        taskQueue: unique('no-worker'),
        workflowId,
        args: [{ key: 'k', requester: 'r' }],
      });
      await handle.terminate('the test ends this run');
    }
    await waitFor('both runs visible', async () => {
      const runs = await runsPerSessionId(fixture.env.client, `WorkflowId = '${workflowId}'`);
      return runs[workflowId] === 2;
    });
  });

  it('records a worker that exits by itself as a crash and replaces it, but not one the nemesis killed', async () => {
    const dir = path.dirname(freshSqlitePath());
    const crashing = path.join(dir, `crashing-${process.pid}.js`);
    const steady = path.join(dir, `steady-${process.pid}.js`);
    fs.writeFileSync(crashing, 'setTimeout(() => process.exit(1), 200);\n');
    fs.writeFileSync(steady, 'setInterval(() => undefined, 1000);\n');

    const killedPool = new WorkerPool({ size: 1, runDir: dir, env: {}, script: steady });
    killedPool.startAll();
    await delay(300);
    await killedPool.kill(0);
    await delay(300);
    await killedPool.stopAll();
    expect(killedPool.crashes).toEqual([]);
    expect(killedPool.journals).toHaveLength(2);

    const crashingPool = new WorkerPool({ size: 1, runDir: dir, env: {}, script: crashing });
    crashingPool.startAll();
    await waitFor('two crashes', async () => crashingPool.crashes.length >= 2, 20_000);
    await crashingPool.stopAll();
    expect(crashingPool.crashes[0]).toMatch(
      /^worker 0 \(journal journal-1\.jsonl\) exited by itself: code 1$/,
    );
    expect(crashingPool.journals.length).toBeGreaterThanOrEqual(3);
  });
});
