// lockwarden as production connects: Temporal's real server with mTLS on its frontend and its JWT
// authorizer (devkit/secureTemporal.ts), reached through a connection profile and an API key, and a
// lock service over TLS with a password. The lock worker, the model worker and lockctl run a contended
// acquisition through it; a read-only key reads and is refused writes; and no secret used in the run
// shows up anywhere a person or a system could read it.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { VALID_DECISION } from '../devkit/decisionInputs';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { startSecureTemporal, trustedTls, type SecureTemporal } from '../devkit/secureTemporal';
import { SECURE_SERVERS_DIR, secureServerUrl } from '../devkit/servers';
import { unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';

const ROOT = path.join(__dirname, '..');
const ANTHROPIC_KEY = 'sk-ant-secure-test-5f1c0a9e7d3b';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lw-secure-'));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

// Every output a person would read in this run, kept for the search for secrets at the end.
const seen: string[] = [];

function lockctl(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'client/lockctl.ts', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: dir, ...env }, timeout: 90_000 },
      (error, stdout, stderr) => {
        seen.push(stdout, stderr);
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

function startProcess(script: string, env: Record<string, string>, logName: string): ChildProcess {
  const log = fs.openSync(path.join(dir, logName), 'w');
  return spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: dir, ...env },
    stdio: ['ignore', log, log],
  });
}

describe('production connections: mTLS, API keys and a lock service over TLS', () => {
  let server: SecureTemporal;
  let writeKey: string;
  let readKey: string;
  const model = new FakeMessagesApi();
  const workers: ChildProcess[] = [];
  const taskQueue = unique('secure');
  const modelQueue = unique('secure-model');
  const key = unique('secure-key');
  // The profile every process uses: TLS, the CA, the client certificate; the API key in the variable.
  const temporalProfile = () => ({
    TEMPORAL_CONFIG_FILE: path.join(dir, 'temporal.toml'),
    TEMPORAL_PROFILE: 'secure',
    TEMPORAL_API_KEY: writeKey,
  });
  // The model worker refuses any variable that names a lock: the lock worker's queue goes to the rest.
  const profile = () => ({ ...temporalProfile(), LOCKWARDEN_TASK_QUEUE: taskQueue });

  beforeAll(async () => {
    server = await startSecureTemporal(path.join(dir, 'server'));
    writeKey = server.issuer.token('lockwarden-worker', ['default:write']);
    readKey = server.issuer.token('lockwarden-auditor', ['default:read']);
    const { pki } = server;
    fs.writeFileSync(
      path.join(dir, 'temporal.toml'),
      `[profile.secure]\naddress = "${server.address}"\nnamespace = "default"\n\n[profile.secure.tls]\n` +
        `server_name = "localhost"\nserver_ca_cert_path = "${pki.ca.cert}"\n` +
        `client_cert_path = "${pki.client.cert}"\nclient_key_path = "${pki.client.key}"\n`,
    );
    await model.start();
    model.answer({ kind: 'tool', input: VALID_DECISION });
  }, 180_000);

  afterAll(async () => {
    for (const worker of workers) worker.kill('SIGTERM');
    await model.stop();
    await server?.stop();
  });

  const bareTls = () => ({
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: server.pki.ca.cert,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
    TEMPORAL_API_KEY: writeKey,
  });

  it('refuses a client without a certificate, saying the server requires one', async () => {
    const run = await lockctl(bareTls(), 'list');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /cannot connect to Temporal at 127\.0\.0\.1:\d+ over TLS: the server requires a client certificate/,
    );
  });

  it('refuses a client certificate from another CA, saying the server does not trust it', async () => {
    const { strangerClient } = server.pki;
    const run = await lockctl(
      {
        ...bareTls(),
        TEMPORAL_TLS_CLIENT_CERT_PATH: strangerClient.cert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: strangerClient.key,
      },
      'list',
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/over TLS: the server does not trust the client certificate/);
  });

  it('runs a contended acquisition with the lock worker, the model worker and lockctl through it', async () => {
    workers.push(
      startProcess(
        'worker/main.ts',
        {
          ...profile(),
          LOCK_SERVICE_URL: secureServerUrl('redis'),
          LOCKWARDEN_MODEL_TASK_QUEUE: modelQueue,
          METRICS_PORT: '19464',
        },
        'lock-worker.log',
      ),
      startProcess(
        'worker/modelMain.ts',
        {
          ...temporalProfile(),
          LOCKWARDEN_MODEL_TASK_QUEUE: modelQueue,
          ANTHROPIC_API_KEY: ANTHROPIC_KEY,
          ANTHROPIC_BASE_URL: model.baseURL,
        },
        'model-worker.log',
      ),
    );
    const polling = (log: string) => () => fs.readFileSync(path.join(dir, log), 'utf8').includes('polling');
    await waitFor('the lock worker polling', async () => polling('lock-worker.log')(), 60_000);
    await waitFor('the model worker polling', async () => polling('model-worker.log')(), 60_000);

    const holder = lockctl(profile(), 'acquire', key, '--requester', 'holder', '--hold-for', '4s');
    await waitFor(
      'the holder holding',
      async () => (await lockctl(profile(), 'status', key)).stdout.includes('held by holder'),
      60_000,
    );
    // No place in a queue: the waiter backs off, and the model worker decides how long.
    const waiter = await lockctl(
      profile(),
      'acquire',
      key,
      '--requester',
      'waiter',
      '--fairness',
      'no-starvation-guarantee',
      '--hold-for',
      '1s',
    );
    const held = await holder;
    expect(held.code).toBe(0);
    expect(waiter.code).toBe(0);
    // Tokens come from one sequence per lock service (a shared server): the waiter's is the higher.
    const tokenIn = (out: string) => BigInt(/"token":"(\d+)"/.exec(out)?.[1] ?? '0');
    expect(tokenIn(held.stdout)).toBeGreaterThan(0n);
    expect(tokenIn(waiter.stdout)).toBeGreaterThan(tokenIn(held.stdout));
    const state = JSON.parse((await lockctl(profile(), 'state', `lock/${key}/waiter`)).stdout) as {
      decisions: { provider: string }[];
    };
    expect(state.decisions[0]).toMatchObject({ provider: 'anthropic' });
    expect(model.requests.length).toBeGreaterThan(0);
  }, 180_000);

  it('lets a read-only key list and read, and refuses it every write, naming the permission', async () => {
    const readOnly = { ...profile(), TEMPORAL_API_KEY: readKey };
    for (const read of [
      ['list', '--key', key],
      ['status', key],
      ['state', `lock/${key}/waiter`],
    ]) {
      const run = await lockctl(readOnly, ...read);
      expect({ read, code: run.code }).toEqual({ read, code: 0 });
    }
    const writes = [
      ['acquire', key, '--requester', 'auditor', '--detach'],
      ['release', key, '--holder', 'waiter', '--release-key', 'not-needed-to-be-refused'],
      ['resolve', `lock/${key}/waiter`, '--action', 'abandon', '--operator', 'auditor', '--reason', 'test'],
      ['force-release', key, '--holder', 'waiter', '--token', '2', '--reason', 'test'],
    ];
    for (const write of writes) {
      const run = await lockctl(readOnly, ...write);
      expect({ write, code: run.code }).toEqual({ write, code: 7 });
      expect(run.stderr).toMatch(
        new RegExp(`permission denied: lockctl ${write[0]} needs write permission on namespace "default"`),
      );
    }
  }, 120_000);

  it('shows no secret in logs, errors, histories, search attributes, metrics, lockctl output or prompts', async () => {
    const secrets = {
      'the write API key': writeKey,
      'the read-only API key': readKey,
      'the Anthropic key': ANTHROPIC_KEY,
      'the Redis password': fs
        .readFileSync(path.join(SECURE_SERVERS_DIR, 'secrets', 'redis-lockwarden'), 'utf8')
        .trim(),
      // A line from the middle of the client's private key.
      'the client key': fs.readFileSync(server.pki.client.key, 'utf8').split('\n')[5]!,
    };
    const connection = await Connection.connect({
      address: server.address,
      tls: trustedTls(server.pki),
      apiKey: server.adminKey,
    });
    const client = new Client({ connection });
    const histories: string[] = [];
    for await (const execution of client.workflow.list({ query: `LockKey = '${key}'` })) {
      const handle = client.workflow.getHandle(execution.workflowId, execution.runId);
      histories.push(JSON.stringify(await handle.fetchHistory()), JSON.stringify(await handle.describe()));
    }
    await connection.close();
    expect(histories.length).toBeGreaterThanOrEqual(2);
    const metrics = await (await fetch('http://127.0.0.1:19464/metrics')).text();
    const places = {
      'the lock worker log': fs.readFileSync(path.join(dir, 'lock-worker.log'), 'utf8'),
      'the model worker log': fs.readFileSync(path.join(dir, 'model-worker.log'), 'utf8'),
      "lockctl's output and errors": seen.join('\n'),
      'the histories and search attributes': histories.join('\n'),
      'the metrics': metrics,
      'the prompts': model.requests.map((r) => r.rawBody).join('\n'),
    };
    expect(model.requests.length).toBeGreaterThan(0);
    const leaks = Object.entries(places).flatMap(([place, text]) =>
      Object.entries(secrets)
        .filter(([, secret]) => text.includes(secret))
        .map(([name]) => `${name} in ${place}`),
    );
    expect(leaks).toEqual([]);
  }, 60_000);
});
