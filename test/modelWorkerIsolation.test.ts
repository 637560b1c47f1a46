import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { acquire, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import { VALID_DECISION } from '../devkit/decisionInputs';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { SERVER_URLS } from '../devkit/servers';
import { FaultyLink } from '../campaign/faultyLink';
import { MODEL_QUEUE_WAIT_MS } from '../policy/constants';
import type { RecordedDecision } from '../policy/sessionModel/sessionTypes';
import { NetworkNamespace } from './support/networkNamespace';
import { sessionFixture, silentLog, TEMPORAL_ADDRESS, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

const ROOT = path.join(__dirname, '..');
const portOf = (url: string) => Number(new URL(url.replace(/^etcd:/, 'http:')).port);
const [temporalHost, temporalPort] = TEMPORAL_ADDRESS.split(':') as [string, string];

// Two worker roles, deployed apart: sessions and lock calls in the lock worker; retry decisions on
// the model worker's queue, served by a model worker that runs where no lock service can be reached.
describe('the model worker, as deployed', () => {
  const fixture = sessionFixture();

  // A waiter that backs off (no park) asks for a decision on every denial.
  async function contendedDecision(modelTaskQueue: string) {
    const key = unique('roles');
    return withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, modelTaskQueue },
      async (taskQueue) => {
        const held = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
        const waiter = await startAcquisition(
          fixture.env.client,
          {
            key,
            requester: 'waiter',
            wakeOnRelease: false,
            budget: { baseBackoffMs: 50, maxBackoffMs: 200 },
          },
          { taskQueue },
        );
        let first: RecordedDecision | undefined;
        await waitFor(
          'the first decision',
          async () => !!(first = (await stateOf(fixture.env.client, waiter.workflowId)).decisions[0]),
          MODEL_QUEUE_WAIT_MS + 20_000,
        );
        await release(fixture.env.client, held.lease);
        await fixture.env.client.workflow.getHandle(waiter.workflowId).terminate('the test has its decision');
        return first;
      },
    );
  }

  it('falls back to the policy, within the queue wait, while no model worker runs', async () => {
    const decision = await contendedDecision(unique('no-model-worker'));
    expect(decision).toMatchObject({ provider: 'policy', fallbackCause: 'model-unavailable' });
  });

  it('refuses to start beside a lock-service setting', async () => {
    const refused = await runToExit(
      spawn(process.execPath, ['--import', 'tsx', 'worker/modelMain.ts'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH, LOCK_SERVICE_URL: SERVER_URLS.redis, ANTHROPIC_API_KEY: 'sk-test' },
      }),
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /LOCK_SERVICE_URL: the model worker holds no lock-service or fencing setting/,
    );
  });

  describe('in a network namespace with only Temporal and the model API open', () => {
    const model = new FakeMessagesApi();
    const netns = new NetworkNamespace('model');
    const temporalLink = new FaultyLink(
      { host: temporalHost, port: Number(temporalPort) },
      0,
      netns.hostAddress,
    );
    let modelLink: FaultyLink;
    let worker: ChildProcess | undefined;

    beforeAll(async () => {
      await model.start();
      modelLink = new FaultyLink(
        { host: '127.0.0.1', port: Number(new URL(model.baseURL).port) },
        0,
        netns.hostAddress,
      );
      netns.open(); // the pair first: the links listen on its host end
      await temporalLink.start();
      await modelLink.start();
      netns.allowOnly([temporalLink.port, modelLink.port]);
    });
    afterAll(async () => {
      worker?.kill('SIGKILL');
      await temporalLink.close();
      await modelLink.close();
      netns.close();
      await model.stop();
    });

    it("cannot reach any lock service, and still answers the sessions' decisions", async () => {
      const lockTargets = (['redis', 'postgres', 'etcd'] as const).flatMap((name) => [
        `127.0.0.1:${portOf(SERVER_URLS[name])}`,
        `${netns.hostAddress}:${portOf(SERVER_URLS[name])}`,
      ]);
      const open = [temporalLink.address, modelLink.address];
      const reached = probe(netns, [...lockTargets, ...open]);
      expect(Object.fromEntries(lockTargets.map((t) => [t, reached[t]]))).toEqual(
        Object.fromEntries(
          lockTargets.map((t) => [t, expect.stringMatching(/ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|timeout/)]),
        ),
      );
      expect(open.map((t) => reached[t])).toEqual(['connected', 'connected']);

      model.answer({ kind: 'tool', input: VALID_DECISION });
      const modelTaskQueue = unique('model-worker');
      worker = netns.spawnInside(process.execPath, ['--import', 'tsx', 'worker/modelMain.ts'], {
        cwd: ROOT,
        // The environment of a host with no lock credential: nothing but what the role reads.
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          TEMPORAL_ADDRESS: temporalLink.address,
          LOCKWARDEN_MODEL_TASK_QUEUE: modelTaskQueue,
          ANTHROPIC_API_KEY: 'sk-ant-test',
          ANTHROPIC_BASE_URL: `http://${modelLink.address}`,
          LOCKWARDEN_MODEL: 'claude-haiku-4-5',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      await lineFrom(worker, /model worker polling/);
      const decision = await contendedDecision(modelTaskQueue);
      expect(decision).toMatchObject({ provider: 'anthropic', fallbackCause: null, retryAfterMs: 400 });
      expect(model.requests.length).toBeGreaterThan(0);
    });
  });
});

// Which of `targets` (host:port) a process inside the namespace can open a TCP connection to.
function probe(netns: NetworkNamespace, targets: string[]): Record<string, string> {
  const script = `
    const net = require('node:net');
    const targets = ${JSON.stringify(targets)};
    Promise.all(targets.map((t) => new Promise((done) => {
      const [host, port] = t.split(':');
      const socket = net.connect({ host, port: Number(port) });
      const end = (result) => { socket.destroy(); done([t, result]); };
      socket.setTimeout(2000, () => end('timeout'));
      socket.once('connect', () => end('connected'));
      socket.once('error', (e) => end(e.code || String(e)));
    }))).then((r) => console.log(JSON.stringify(Object.fromEntries(r))));`;
  return JSON.parse(netns.inside(process.execPath, '-e', script)) as Record<string, string>;
}

function runToExit(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
}

// Resolves at the first line of the child's stdout that matches; rejects if it exits first.
function lineFrom(child: ChildProcess, pattern: RegExp): Promise<string> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (pattern.test(line)) resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`the model worker exited (${code}): ${stderr}`)));
  });
}
