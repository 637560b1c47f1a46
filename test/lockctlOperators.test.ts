import { type ChildProcess, execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { awaitLeaseShowingProgress } from '../client/acquireProgress';
import { acquire, release, resolve, startAcquisition, stateOf } from '../client/lockwardenClient';
import { LeaseActionDeniedError } from '../policy/errors';
import type { SessionRow } from '../client/sessionList';
import { acquisitionWorkflowId } from '../policy/constants';
import type { LockStatus } from '../policy/lockContract/keyStatus';
import { sessionFixture, silentLog, TEMPORAL_ADDRESS, withWorker } from './support/temporalFixture';
import { unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';

// lockctl as an SRE on call uses it: who holds a key and who waits behind it, in what order, and
// how an acquisition that waits is going. The CLI runs as its own process against a real worker.
const ROOT = path.join(__dirname, '..');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');
const run = promisify(execFile);

function lockctlArgs(taskQueue: string, args: string[]): string[] {
  return ['client/lockctl.ts', '--address', TEMPORAL_ADDRESS, '--task-queue', taskQueue, ...args];
}

async function lockctl(taskQueue: string, ...args: string[]): Promise<string> {
  return (await run(TSX, lockctlArgs(taskQueue, args), { cwd: ROOT })).stdout;
}

/** A `lockctl acquire` left running, its output collected; `exit` resolves with its exit code. */
function acquireInBackground(taskQueue: string, key: string, requester: string, extra: string[] = []) {
  // Node itself runs lockctl (tsx as its loader, not its launcher), so a signal reaches lockctl.
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', ...lockctlArgs(taskQueue, ['acquire', key, '--requester', requester, ...extra])],
    { cwd: ROOT },
  );
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
  const exit = new Promise<number>((done) => child.once('exit', (code) => done(code ?? -1)));
  return { child, out, exit };
}

describe('lockctl for operators', () => {
  const fixture = sessionFixture();
  // A test that fails while a lockctl still waits must not leave it running (jest would wait on it).
  const running: ChildProcess[] = [];
  afterEach(() => {
    for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('lists the sessions of a contended key, shows its holder and queue on the service clock, and shows a waiter its progress', async () => {
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, escalations: fixture.escalations },
      async (taskQueue) => {
        const key = unique('billing/nightly-export');
        const holder = await acquire(fixture.env.client, { key, requester: 'replica-a' }, { taskQueue });
        // One after the other, so the queue's order is theirs.
        const waiters: ReturnType<typeof acquireInBackground>[] = [];
        for (const requester of ['replica-b', 'replica-c']) {
          // replica-c declares the job it holds for while it waits, for the wait-for graph.
          const owner = requester === 'replica-c' ? ['--owner', 'nightly-job'] : [];
          // Detached: each exits once it holds, its session holding on (until released).
          waiters.push(acquireInBackground(taskQueue, key, requester, ['--detach', ...owner]));
          running.push(waiters.at(-1)!.child);
          await waitFor(
            `${requester} queued`,
            async () =>
              (await stateOf(fixture.env.client, acquisitionWorkflowId(key, requester))).phase === 'queued',
            30_000,
          );
        }

        const rows = JSON.parse(await lockctl(taskQueue, 'list', '--key', key, '--json')) as SessionRow[];
        const byRequester = Object.fromEntries(rows.map((r) => [r.requester, r]));
        expect(Object.keys(byRequester).sort()).toEqual(['replica-a', 'replica-b', 'replica-c']);
        expect(byRequester['replica-a']).toMatchObject({
          key,
          state: 'holding',
          holder: 'replica-a',
          attempts: 1,
        });
        expect(byRequester['replica-b']).toMatchObject({
          state: 'queued',
          holder: 'replica-a',
          status: 'RUNNING',
          owner: null,
        });
        expect(byRequester['replica-c']).toMatchObject({ owner: 'nightly-job' });
        expect(byRequester['replica-b']!.waitedMs).toBeGreaterThan(0);
        expect(byRequester['replica-b']!.uiUrl).toContain(
          encodeURIComponent(acquisitionWorkflowId(key, 'replica-b')),
        );
        const queued = JSON.parse(
          await lockctl(taskQueue, 'list', '--key', key, '--state', 'queued', '--json'),
        );
        expect((queued as SessionRow[]).map((r) => r.requester).sort()).toEqual(['replica-b', 'replica-c']);
        const table = await lockctl(taskQueue, 'list', '--requester', 'replica-c', '--key', key);
        expect(table.split('\n')[0]).toMatch(
          /^KEY\s+REQUESTER\s+STATE\s+ATTEMPTS\s+WAITED\s+HOLDER\s+OWNER\s+UI$/,
        );
        // The attempts column is the session's count when listed: a parked waiter that refreshed its
        // ticket meanwhile (a slow machine) has made more than one.
        const cells = table.split('\n')[1]!.split(/\s+/);
        const [, requester, state, attempts] = cells;
        // The owner is the column before the UI link (the wait's column has a space in it).
        expect([requester, state, cells.at(-2)]).toEqual(['replica-c', 'queued', 'nightly-job']);
        const listedAttempts = Number(attempts);
        expect(listedAttempts).toBeGreaterThanOrEqual(1);
        const stateAfter = await stateOf(fixture.env.client, acquisitionWorkflowId(key, 'replica-c'));
        expect(listedAttempts).toBeLessThanOrEqual(stateAfter.attempts);

        const status = JSON.parse(await lockctl(taskQueue, 'status', key, '--json')) as LockStatus;
        expect(status).toMatchObject({
          key,
          backend: 'sqlite',
          holder: 'replica-a',
          token: holder.lease.token,
        });
        expect(status.leaseLeftMs).toBeGreaterThan(0);
        expect(status.queue.map((w) => [w.place, w.requester])).toEqual([
          [1, 'replica-b'],
          [2, 'replica-c'],
        ]);
        // On the lock service's clock: replica-b has waited longer than replica-c, both less than since the holder took it.
        expect(status.queue[0]!.waitingMs!).toBeGreaterThan(status.queue[1]!.waitingMs!);
        expect(status.queue[0]!.waitingMs!).toBeLessThanOrEqual(status.serviceTime - holder.lease.grantedAt);
        expect(await lockctl(taskQueue, 'status', key)).toMatch(
          new RegExp(
            `held by replica-a with token ${holder.lease.token}[^]*PLACE\\s+WAITER[^]*1\\s+replica-b[^]*2\\s+replica-c`,
          ),
        );

        // Not a terminal: a plain progress line on stderr, naming the place and the holder.
        expect(waiters[0]!.out.stderr).toMatch(
          /queued .* · attempts 1 · place 1 · behind replica-a · last decision retry/,
        );
        expect(await release(fixture.env.client, holder.lease)).toMatchObject({ ok: true });
        expect(await waiters[0]!.exit).toBe(0);
        type Printed = { lease: { holder: string; token: string }; releaseKey: string };
        const answer = JSON.parse(waiters[0]!.out.stdout) as Printed;
        expect(answer.lease).toMatchObject({
          holder: 'replica-b',
          token: String(Number(holder.lease.token) + 1),
        });
        // lockctl acquire printed the release key: without it, this process may not release.
        await expect(release(fixture.env.client, { key, holder: 'replica-b' })).rejects.toThrow(
          LeaseActionDeniedError,
        );
        await release(fixture.env.client, { key, holder: 'replica-b' }, { releaseKey: answer.releaseKey });
        expect(await waiters[1]!.exit).toBe(0);
        const third = JSON.parse(waiters[1]!.out.stdout) as Printed;
        await release(fixture.env.client, { key, holder: 'replica-c' }, { releaseKey: third.releaseKey });
      },
    );
  });

  it('rewrites one progress line in place on a terminal, and ends it when the lease is held', async () => {
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, escalations: fixture.escalations },
      async (taskQueue) => {
        const key = unique('tty');
        const holder = await acquire(fixture.env.client, { key, requester: 'replica-a' }, { taskQueue });
        const waiter = await startAcquisition(
          fixture.env.client,
          { key, requester: 'replica-b' },
          { taskQueue },
        );
        const written: string[] = [];
        const terminal = { isTTY: true, write: (text: string) => written.push(text) };
        const answer = awaitLeaseShowingProgress(fixture.env.client, waiter.workflowId, terminal, 100);
        await waitFor('a progress line', async () => written.some((t) => t.includes('place 1')));
        expect(await release(fixture.env.client, holder.lease)).toMatchObject({ ok: true });
        expect(await answer).toMatchObject({ status: 'acquired', lease: { holder: 'replica-b' } });
        // Each line erases the one before it, and the last is ended, so the shell prompt starts clean.
        expect(written.slice(0, -1).every((t) => t.startsWith('\r\x1b[2K'))).toBe(true);
        expect(written.at(-1)).toBe('\n');
        await release(fixture.env.client, { key, holder: 'replica-b' });
      },
    );
  });

  it('bounds a status read when no worker polls the task queue, and says so', async () => {
    const failure = await lockctl(unique('nobody-polls'), 'status', 'some-key').then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toMatch(
      /no lockwarden worker read some-key within 15 s: is one polling task queue "nobody-polls-/,
    );
  });

  it('exits 3 when the session is abandoned, and says why', async () => {
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, escalations: fixture.escalations },
      async (taskQueue) => {
        const key = unique('stuck');
        await fixture.locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
        const waiter = acquireInBackground(taskQueue, key, 'pager', ['--max-retries', '0']);
        running.push(waiter.child);
        const workflowId = acquisitionWorkflowId(key, 'pager');
        await waitFor(
          'the escalation',
          async () => (await stateOf(fixture.env.client, workflowId)).phase === 'escalated',
          30_000,
        );
        await resolve(fixture.env.client, workflowId, {
          action: 'abandon',
          operator: 'carol',
          reason: 'job killed',
        });
        expect(await waiter.exit).toBe(3);
        expect(waiter.out.stderr).toContain('abandoned by carol: job killed');
        expect(waiter.out.stdout).toBe('');
      },
    );
  });

  it('holds while it runs, as etcdctl lock does: a command after -- runs with the token and its exit code, Ctrl-C releases, a killed lockctl lets go', async () => {
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, escalations: fixture.escalations },
      async (taskQueue) => {
        const key = unique('etcdctl-style');
        // Around a command: the token in its environment, its exit code passed on, released after.
        const command = acquireInBackground(taskQueue, key, 'cron', [
          '--quiet',
          '--',
          'sh',
          '-c',
          'echo "token=$LOCKWARDEN_TOKEN key=$LOCKWARDEN_KEY"; exit 7',
        ]);
        running.push(command.child);
        expect(await command.exit).toBe(7);
        expect(command.out.stdout.trim()).toBe(`token=1 key=${key}`);
        expect(await fixture.locks.inspect(key)).toMatchObject({ holder: null, lastToken: '1' });

        // Held until interrupted: SIGINT releases it, fenced, and lockctl exits 0.
        const interactive = acquireInBackground(taskQueue, key, 'operator', ['--quiet']);
        running.push(interactive.child);
        await waitFor(
          'held by lockctl',
          async () => (await fixture.locks.inspect(key)).holder === 'operator',
        );
        await waitFor('its lease printed', async () => interactive.out.stdout.includes('"token":"2"'));
        interactive.child.kill('SIGINT');
        expect(await interactive.exit).toBe(0);
        expect(await fixture.locks.inspect(key)).toMatchObject({ holder: null });

        // Killed (no release): its keep-alives stop and the session lets the lease go.
        const killed = acquireInBackground(taskQueue, key, 'doomed', ['--quiet', '--holder-ttl-ms', '3000']);
        running.push(killed.child);
        await waitFor('held by lockctl', async () => (await fixture.locks.inspect(key)).holder === 'doomed');
        killed.child.kill('SIGKILL');
        const outcome = await fixture.env.client.workflow
          .getHandle(acquisitionWorkflowId(key, 'doomed'))
          .result();
        expect(outcome).toMatchObject({ status: 'lease-lost' });
        expect((outcome as { reason: string }).reason).toMatch(
          /^no keep-alive from the holder within 3000 ms/,
        );
        expect(await fixture.locks.inspect(key)).toMatchObject({ holder: null });
      },
    );
  }, 60_000);
});
