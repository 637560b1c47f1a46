import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { FileEscalationStore } from '../activities/escalationStore';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { mapConcurrently } from '../client/concurrency';
import { acquire, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import { SESSION_QUEUE_TICKET_MS } from '../policy/lockContract/lockSchemas';
import { deadlockFound, fairnessViolated } from '../temporal/messages';
import { FAKE_MODEL } from './support/runScenario';
import { sessionFixture, silentLog, withWorker } from './support/temporalFixture';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';

// The lock service goes away for longer than Temporal's retries of one call (a restart, a failover):
// sessions ride the outage out. On a PostgreSQL server of this suite's own, so stopping it disturbs
// no other suite.
// Below the ephemeral range (32768-60999), where the dev server picks its own services' ports.
const PORT = 15632;
const SERVERS_DIR = path.join(
  process.getuid?.() === 0 ? '/var/lib/lockwarden' : path.join(os.homedir(), '.local', 'state', 'lockwarden'),
  'outage-test',
);
const server = (command: 'start' | 'stop') =>
  execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'lock-servers.sh'), command, 'postgres'], {
    stdio: 'ignore',
    env: { ...process.env, LOCKWARDEN_SERVERS_DIR: SERVERS_DIR, LOCKWARDEN_PG_PORT: String(PORT) },
  });

describe('a lock service outage', () => {
  const fixture = sessionFixture();
  // Timers a session set to try an unreachable release again (their summary says so).
  const retriedReleases = async (workflowId: string) => {
    const history = await fixture.env.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).filter((e) => {
      const summary = e.timerStartedEventAttributes && e.userMetadata?.summary?.data;
      return summary && Buffer.from(summary).toString().includes('lock service unreachable: release');
    }).length;
  };

  let locks: LockService;
  beforeAll(async () => {
    fs.mkdirSync(SERVERS_DIR, { recursive: true });
    server('start');
    locks = await openLockService(`postgres://lockwarden@127.0.0.1:${PORT}/lockwarden`);
  });
  afterAll(async () => {
    await locks?.close();
    server('stop');
  });

  it('is a wait, not the end of a session: a waiter backs off until the service is back (no model asked), and a release is retried until it lands', async () => {
    const escalations = new FileEscalationStore(freshSqlitePath().replace(/\.sqlite$/, '.jsonl'));
    // A worker that decides through a model: an outage is not contention, and no model is asked.
    const model = await new FakeMessagesApi().start();
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: model.baseURL });
    await withWorker(fixture.env, { locks, log: silentLog, escalations, decider }, async (taskQueue) => {
      const key = unique('outage');
      const holder = await acquire(
        fixture.env.client,
        { key, requester: 'holder', ttlMs: 30_000 },
        { taskQueue },
      );
      server('stop');
      try {
        // A session that starts while the service is down: each attempt is a denial it backs off from.
        const waiterKey = unique('other');
        const waiter = await startAcquisition(
          fixture.env.client,
          { key: waiterKey, requester: 'waiter', budget: { maxRetries: 100, maxTotalWaitMs: 120_000 } },
          { taskQueue },
        );
        await waitFor(
          'the waiter backing off from an unreachable service',
          async () => {
            const state = await stateOf(fixture.env.client, waiter.workflowId);
            return state.phase === 'backing-off' && state.decisions.length > 0;
          },
          30_000,
        );
        // Notices that must be checked on the service, sent while it is down: they wait, unchecked,
        // and never end the session (which goes on to hold, below).
        const handle = fixture.env.client.workflow.getHandle(waiter.workflowId);
        const attemptsBefore = (await stateOf(fixture.env.client, waiter.workflowId)).attempts;
        await handle.signal(deadlockFound, {
          cycle: 'claimed during the outage',
          escalator: 'nobody',
          edges: [],
        });
        const overtaking = {
          key: waiterKey,
          waiter: 'waiter',
          waiterSince: 1,
          overtakenBy: 'x',
          overtakerSince: 2,
        };
        await handle.signal(fairnessViolated, overtaking);
        // Past the check that could not be made (its calls retried and given up), the waiter tries again.
        await waitFor(
          'the waiter trying again after the unchecked notices',
          async () => (await stateOf(fixture.env.client, waiter.workflowId)).attempts > attemptsBefore,
          30_000,
        );
        // The holder's release, asked during the outage, waits for the service instead of failing: the
        // service stays down until the session has seen its release fail (past Temporal's own retries
        // of the call) and has set the timer to try it again.
        const released = release(fixture.env.client, holder.lease);
        await waitFor(
          'the release failing and set to be tried again',
          async () => (await retriedReleases(holder.session.workflowId)) > 0,
          60_000,
        );
        server('start');
        expect(await released).toMatchObject({ ok: true });
        expect(await holder.session.result()).toMatchObject({ status: 'released' });
        await waitFor(
          'the waiter holding',
          async () => (await stateOf(fixture.env.client, waiter.workflowId)).phase === 'holding',
          30_000,
        );
        const state = await stateOf(fixture.env.client, waiter.workflowId);
        expect(state.lease?.holder).toBe('waiter');
        expect(state.attempts).toBeGreaterThan(1);
        // Every decision of the outage came from the policy, saying why; the model was never asked.
        expect(state.decisions.length).toBeGreaterThan(0);
        for (const decision of state.decisions)
          expect(decision).toMatchObject({ provider: 'policy', fallbackCause: 'lock-service-unreachable' });
        expect(model.requests).toEqual([]);
        expect(await release(fixture.env.client, state.lease!)).toMatchObject({ ok: true });
      } finally {
        server('start');
      }
    }).finally(() => model.stop());
  }, 120_000);

  it('a restart under 1,000 tickets: parked sessions keep their places, sleep through it, and are handed the key in order', async () => {
    await withWorker(fixture.env, { locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      const key = unique('restart-queue');
      const holder = await acquire(client, { key, requester: 'holder', ttlMs: 30_000 }, { taskQueue });
      const sessions = [];
      for (const requester of ['w1', 'w2']) {
        const started = await startAcquisition(client, { key, requester }, { taskQueue });
        await waitFor(
          `${requester} parked`,
          async () => (await stateOf(client, started.workflowId)).phase === 'queued',
        );
        sessions.push(started.workflowId);
      }
      // 998 more waiters behind them: sessions of a worker that is down (started on a task queue
      // nobody polls, so they are alive to a wake-up but run no code), with the tickets such sessions
      // hold, an hour long.
      const others = Array.from({ length: 998 }, (_, i) => `t${i}`);
      const elsewhere = { taskQueue: unique('nobody-polls') };
      const parkedElsewhere = await mapConcurrently(others, 20, async (requester) => {
        const started = await startAcquisition(client, { key, requester }, elsewhere);
        return started.workflowId;
      });
      for (const requester of others)
        await locks.tryAcquire({ key, requester, ttlMs: 30_000, queueTicketMs: SESSION_QUEUE_TICKET_MS });
      server('stop');
      server('start');
      try {
        // The pool's connections died with the server: the first calls may fail while it reconnects.
        await waitFor('the service answering', () =>
          locks.inspect(key).then(
            () => true,
            () => false,
          ),
        );
        expect((await locks.inspect(key)).waiters).toEqual(['w1', 'w2', ...others]);
        // Nothing polled the queue back: the parked sessions slept through the restart.
        for (const id of sessions) expect((await stateOf(client, id)).attempts).toBe(1);
        let lease = holder.lease;
        for (const [i, id] of sessions.entries()) {
          expect(await release(client, lease)).toMatchObject({ ok: true });
          await waitFor(
            `w${i + 1} holding`,
            async () => (await stateOf(client, id)).phase === 'holding',
            30_000,
          );
          lease = (await stateOf(client, id)).lease!;
          expect(lease.holder).toBe(`w${i + 1}`);
        }
        expect(await locks.position({ key, requester: others[others.length - 1]! })).toBe(998);
        expect(await release(client, lease)).toMatchObject({ ok: true });
      } finally {
        for (const requester of others) await locks.leave({ key, requester });
        await mapConcurrently(parkedElsewhere, 20, (id) =>
          client.workflow.getHandle(id).terminate('test over'),
        );
      }
    });
  }, 120_000);
});
