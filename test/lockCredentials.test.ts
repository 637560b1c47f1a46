// A refused credential or permission is not contention: the worker refuses to start on one, and a
// session that meets one escalates at once, with no model asked (seed 000: not "when the caller
// lacks valid credentials"). Real Redis (an ACL user) and real PostgreSQL (an unknown role).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import pino from 'pino';
import { createClient } from 'redis';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { openLockService } from '../locks/openLockService';
import { SERVER_URLS } from '../devkit/servers';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { resolve, startAcquisition, stateOf } from '../client/lockwardenClient';
import { FAKE_MODEL } from './support/runScenario';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { connectTestEnv, unique, withWorker, TEMPORAL_ADDRESS } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

const run = promisify(execFile);
const asUser = (user: string, password: string) =>
  SERVER_URLS.redis.replace('redis://', `redis://${user}:${password}@`);

describe('refused credentials and permissions', () => {
  const user = unique('lw-acl').replace(/[^A-Za-z0-9-]/g, '-');
  const admin = createClient({ url: SERVER_URLS.redis });
  const model = new FakeMessagesApi();
  let env: TestWorkflowEnvironment;

  beforeAll(async () => {
    await admin.connect();
    await admin.sendCommand(['ACL', 'SETUSER', user, 'on', '>right-password', '~*', '&*', '+@all']);
    await model.start();
    env = await connectTestEnv();
  });
  afterAll(async () => {
    await admin.sendCommand(['ACL', 'DELUSER', user]);
    await admin.quit();
    await model.stop();
    await env?.teardown();
  });

  it('refuses to open a lock service that refuses the credentials, naming neither URL nor password', async () => {
    const wrongPassword = openLockService(asUser(user, 'not-the-password'));
    await expect(wrongPassword).rejects.toMatchObject({
      name: 'LockServiceCredentialsRefused',
      message: expect.stringMatching(/refused the worker's credentials.*WRONGPASS/),
    });
    await expect(wrongPassword).rejects.not.toMatchObject({
      message: expect.stringContaining('not-the-password'),
    });
    await expect(
      openLockService(SERVER_URLS.postgres.replace('lockwarden@', 'nobody@')),
    ).rejects.toMatchObject({
      name: 'LockServiceCredentialsRefused',
      message: expect.stringContaining('28000: role "nobody" does not exist'),
    });
  });

  it("the worker's start-up check stops the process, with the reason", async () => {
    const started = run(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      cwd: path.join(__dirname, '..'),
      env: {
        ...process.env,
        TEMPORAL_ADDRESS,
        LOCK_SERVICE_URL: asUser(user, 'not-the-password'),
        ANTHROPIC_API_KEY: '',
        LOG_LEVEL: 'silent',
      },
      timeout: 60_000,
    });
    await expect(started).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining(
        "the lock service refused the worker's credentials or permissions: WRONGPASS",
      ),
    });
  });

  it('escalates a session whose worker lost its permissions at once: no decision, no model call', async () => {
    const locks = await openLockService(asUser(user, 'right-password'));
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: model.baseURL });
    const log = pino({ level: 'silent' });
    try {
      // The ACL is taken away from the connected worker: its next command is NOPERM.
      await admin.sendCommand(['ACL', 'SETUSER', user, '-@all']);
      await withWorker(env, { locks, log, decider }, async (taskQueue) => {
        const session = await startAcquisition(
          env.client,
          { key: unique('acl'), requester: 'job' },
          { taskQueue },
        );
        await waitFor(
          'escalated',
          async () => (await stateOf(env.client, session.workflowId)).phase === 'escalated',
        );
        const state = await stateOf(env.client, session.workflowId);
        expect(state.escalation?.reason).toMatch(
          /^lock service refused the worker's credentials or permissions \(NOPERM .+\): not contention, a human must fix the worker's credentials$/,
        );
        expect(state.decisions).toEqual([]);
        expect(model.requests).toEqual([]);
        await resolve(env.client, session.workflowId, {
          action: 'abandon',
          operator: 'ops',
          reason: 'ACL fixed later',
        });
        await expect(session.result()).resolves.toMatchObject({ status: 'abandoned' });
      });
    } finally {
      await admin.sendCommand(['ACL', 'SETUSER', user, '+@all']);
      await locks.close();
    }
  });
});
