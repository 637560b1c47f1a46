import { LATENCY_FLOOR_MS } from '../policy/constants';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import pino from 'pino';
import { FileEscalationStore } from '../activities/escalationStore';
import { createMetrics } from '../activities/metrics';
import {
  acquire,
  acquisitionWorkflowId,
  awaitLeaseOf,
  release,
  startAcquisition,
  stateOf,
  resolve,
} from '../client/lockwardenClient';
import { releaseLease, requestRelease, sessionState } from '../temporal/messages';
import {
  InvalidLockRequestError,
  isSessionNotYetStarted,
  LockNotAcquiredError,
  SessionNotYetStartedError,
} from '../policy/errors';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';
import { FAKE_MODEL, runScenario } from './support/runScenario';
import {
  constraintsEnforced,
  deadlock,
  escalateOperatorRetry,
  escalateTimeoutAbandon,
  escalationResolvedByRelease,
  fastPathHoldRelease,
  heldByKeeper,
  holdEndsByItself,
  leaseLost,
  modelAbandons,
  modelFlagsDeadlock,
  modelByWaitSpan,
  modelClampedThenEscalate,
  modelOverruledByBudget,
  lockStatusOfQueue,
  releaseLockFenced,
  retryThenAcquire,
  type Scenario,
  type ScenarioRun,
  wakeOnRelease,
  withLockHoldLockFor,
  withLockStoppedOnLoss,
} from './support/scenarios';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';
import { freshSqlitePath } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';
import { readIncidentLog } from '../client/incidentLog';
import { renderBriefing } from '../policy/postmortem/briefing';
import { NO_EVIDENCE } from '../policy/postmortem/patchEvidence';
import { releaseGatesSchema } from '../policy/postmortem/releaseGates';
import { buildTimeline } from '../policy/postmortem/timeline';
import { validateBriefing } from '../policy/postmortem/validateBriefing';

const GATES = releaseGatesSchema.parse({
  canaryPercent: [10, 100],
  soakMinutes: 15,
  abort: { p99WaitMs: 2_000 },
  rollback: { deployment: 'lockwarden', previousBuildId: '0.1.0' },
});

// The workflow paths of test/support/scenarios.ts (the same runs the history recorder records), and
// the on-call, review and validation behaviour around them.
describe('acquisition sessions on the dev server', () => {
  const fixture = sessionFixture();
  let escalations: FileEscalationStore;
  let escalationsFile: string;
  let key: string;
  const deps = () => ({ locks: fixture.locks, log: silentLog, escalations });

  beforeEach(() => {
    escalationsFile = freshSqlitePath().replace(/\.sqlite$/, '.jsonl');
    escalations = new FileEscalationStore(escalationsFile);
    key = unique('key');
  });

  const run = <R extends ScenarioRun>(scenario: Scenario<R>) => runScenario(fixture.env, scenario, deps());

  it('fast path: acquires, holds with the token the service issued, answers the state query, and releases fenced', async () => {
    const seen = await run(fastPathHoldRelease);
    expect(seen.lease).toMatchObject({ key: seen.key, holder: 'replica-a', token: '1' });
    expect(seen.holding).toMatchObject({
      phase: 'holding',
      attempts: 1,
      holder: 'replica-a',
      lease: { token: '1' },
      escalation: null,
    });
    expect(seen.lockState).toBe('holding');
    expect(seen.lockKey).toBe(seen.key);
    expect(seen.staticSummary).toBe(`acquire ${seen.key} for replica-a`);
    expect(seen.serviceHolder).toBe('replica-a');
    expect(seen.released).toMatchObject({ ok: true });
    expect(seen.outcome).toMatchObject({ status: 'released', lease: { token: '1' } });
    expect(seen.holderAfter).toBeNull();
  });

  it('keeps the hold with one keeper activity: renewals leave no event in the history, a release cancels it', async () => {
    const seen = await run(heldByKeeper);
    expect(seen.released).toMatchObject({ ok: true });
    expect(seen.outcome).toMatchObject({ status: 'released' });
    expect(seen.holderAfter).toBeNull();
    // Two more renewals at the service, and not one more event in the session's history.
    expect(seen.eventsAfterMoreRenewals).toBe(seen.eventsWhileHeld);
    expect(seen.activitySummaries.filter((s) => s.startsWith('keep token'))).toHaveLength(1);
    expect(seen.activitySummaries.filter((s) => s.startsWith('renew'))).toEqual([]);
    expect(seen.keeperCancelRequested).toBe(true);
    // One version boundary, a Worker Deployment version: no patch marker in a session's history.
    expect(seen.patches).toEqual([]);
  });

  it('a hold given back within half a renewal interval starts no keeper; a longer one starts it then, once', async () => {
    const short = await run(wakeOnRelease);
    expect(short.activitySummaries.filter((s) => s.startsWith('keep token'))).toEqual([]);
    expect(short.timerSummaries).toContainEqual(
      expect.stringMatching(/^hold token \d+: a keeper starts in 5000 ms unless released$/),
    );
    const kept = await run(heldByKeeper);
    expect(kept.outcome).toMatchObject({ status: 'released' });
    // TTL 900 ms: renewals every 300 ms, the keeper from 150 ms on.
    expect(kept.timerSummaries).toEqual([
      expect.stringMatching(/^hold token \d+: a keeper starts in 150 ms unless released$/),
      expect.stringMatching(/^hold token \d+: at most 3600000 ms in all$/),
    ]);
    expect(kept.activitySummaries.filter((s) => s.startsWith('keep token'))).toHaveLength(1);
    expect(kept.eventsAfterMoreRenewals).toBe(kept.eventsWhileHeld);
  });

  it('a session still checking its request answers the state query with checking-request; stateOf then throws SessionNotYetStarted', async () => {
    // The lock service answers the first attempt (which rides in the request's check) only when let go.
    let letGo: () => void = () => {};
    const gate = new Promise<void>((resolve) => (letGo = resolve));
    const slowLocks = new Proxy(fixture.locks, {
      get(target, name, receiver) {
        if (name !== 'tryAcquire') return Reflect.get(target, name, receiver);
        return async (request: Parameters<typeof target.tryAcquire>[0]) => {
          await gate;
          return target.tryAcquire(request);
        };
      },
    });
    await withWorker(fixture.env, { ...deps(), locks: slowLocks }, async (taskQueue) => {
      const started = await startAcquisition(fixture.env.client, { key, requester: 'early' }, { taskQueue });
      const handle = fixture.env.client.workflow.getHandle(started.workflowId);
      await waitFor('the state query answered while checking', async () => {
        const answer = await handle.query(sessionState).catch(() => null);
        return answer !== null && 'status' in answer && answer.status === 'checking-request';
      });
      const failure = await stateOf(fixture.env.client, started.workflowId).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(SessionNotYetStartedError);
      expect(isSessionNotYetStarted(failure)).toBe(true);
      letGo();
      const { lease } = await awaitLeaseOf(fixture.env.client, started.workflowId).then((a) => {
        if (a.status !== 'acquired') throw new Error(`not acquired: ${a.status}`);
        return a;
      });
      expect(await stateOf(fixture.env.client, started.workflowId)).toMatchObject({ phase: 'holding' });
      await release(fixture.env.client, lease);
    });
  }, 60_000);

  it('a session that has ended answers awaitLeaseOf with its outcome and a release with not-holding', async () => {
    await withWorker(fixture.env, deps(), async (taskQueue) => {
      const { lease, session } = await acquire(fixture.env.client, { key, requester: 'done' }, { taskQueue });
      await release(fixture.env.client, lease);
      await session.result();
      // An update cannot reach a closed run: the client reads the outcome instead of throwing.
      await expect(awaitLeaseOf(fixture.env.client, session.workflowId)).resolves.toMatchObject({
        status: 'ended',
        outcome: { status: 'released', lease: { token: lease.token } },
      });
      await expect(release(fixture.env.client, lease)).resolves.toEqual({ ok: false, reason: 'not-holding' });
      // A session that never existed is still an error, and says which.
      await expect(
        awaitLeaseOf(fixture.env.client, acquisitionWorkflowId(key, 'never-started')),
      ).rejects.toThrow(WorkflowNotFoundError);
    });
  });

  it('retry then acquire: backs off on summarized timers while the key is held, then takes it', async () => {
    const seen = await run(retryThenAcquire);
    expect(seen.holding.attempts).toBeGreaterThanOrEqual(3);
    expect(seen.holding.decisions[0]).toMatchObject({ provider: 'policy', decision: 'retry' });
    const backoffs = seen.timerSummaries.filter((s) => s.startsWith('backoff'));
    expect(backoffs.length).toBeGreaterThanOrEqual(2);
    for (const summary of backoffs) {
      const ms = Number(/^backoff (\d+) ms, decorrelated-jitter, attempt \d+ of 21: .+$/.exec(summary)?.[1]);
      expect(ms).toBeGreaterThanOrEqual(50);
      expect(ms).toBeLessThanOrEqual(200);
    }
  });

  it('wake-on-release: a queued waiter parks on one timer, and the release wakes it long before the timer is due', async () => {
    const seen = await run(wakeOnRelease);
    // The head parks until what is left of its budget (the default 60 s) runs out: not on a back-off
    // grid, and not until the holder's lease ends (30 s): the holder's session tells it, not a timer.
    const parks = seen.timerSummaries.filter((s) => !s.startsWith('hold'));
    expect(parks).toHaveLength(1);
    const parked =
      /^parked up to (\d+) ms at place 1 behind holder, attempt 1 of 21: a release wakes it$/.exec(parks[0]!);
    expect(Number(parked?.[1])).toBeGreaterThan(30_000 + LATENCY_FLOOR_MS);
    expect(Number(parked?.[1])).toBeLessThanOrEqual(60_000);
    // The release cut the park short: its timer was cancelled, and the hand-off (about 100 ms here)
    // came well before the timer would have fired.
    expect(seen.timerCanceled).toBe(true);
    expect(seen.handoffMs).toBeLessThan(15_000);
    expect(seen.patches).toEqual([]);
  });

  it('escalates, waits for the operator, and acquires after the operator grants more budget; refuses answers it cannot take', async () => {
    const seen = await run(escalateOperatorRetry);
    expect(seen.escalated.escalation).toMatchObject({
      reason: 'budget spent (max-retries)',
      deadlock: false,
      resolution: null,
    });
    expect(seen.recorded).toBe(1);
    expect(seen.applied).toMatchObject({ action: 'retry', extraRetries: 3, operator: 'alice' });
    expect(seen.holding.escalation?.resolution).toMatchObject({ action: 'retry', operator: 'alice' });
    // The malformed signal was counted, not acted on.
    expect(seen.holding.ignoredOperatorAnswers).toBe(1);
    expect(seen.refusal).toBe('operator answer refused: the session is holding, not waiting for an operator');
    expect(seen.outcome).toMatchObject({ status: 'released' });
  });

  it('an escalated waiter keeps its place: a release wakes it, it acquires, and the escalation resolves itself', async () => {
    const seen = await run(escalationResolvedByRelease);
    expect(seen.escalated).toMatchObject({
      phase: 'escalated',
      escalation: { reason: 'budget spent (max-retries)', resolution: null },
    });
    expect(seen.holding).toMatchObject({
      phase: 'holding',
      lease: { holder: 'replica-b' },
      escalation: { resolution: 'acquired' },
    });
    expect(seen.activitySummaries).toEqual([
      'check the request, fast path, attempt 1',
      'retry decision, attempt 1',
      'page on-call: budget spent (max-retries)',
      'escalated, tries on a release, attempt 2',
      'tell on-call: resolved, the lock was acquired',
      `release token ${seen.holding.lease!.token}`,
    ]);
    // Paged once; the resolution is recorded but not counted as another escalation.
    expect(seen.escalationsCounted).toBe(1);
    expect(seen.lateAnswer).toBe(
      'operator answer refused: the session is holding, not waiting for an operator',
    );
    expect(seen.outcome).toMatchObject({ status: 'released' });
  });

  it('escalates and abandons when no operator answers in time', async () => {
    const seen = await run(escalateTimeoutAbandon);
    expect(seen.outcome).toMatchObject({
      status: 'abandoned',
      reason: expect.stringContaining('no operator answer within 1000 ms'),
    });
    expect(seen.waitersAfter).toEqual([]);
    await withWorker(fixture.env, deps(), async (taskQueue) => {
      await expect(
        acquire(
          fixture.env.client,
          { key: seen.key, requester: 'another', budget: { maxRetries: 0 }, escalationTimeoutMs: 1_000 },
          { taskQueue },
        ),
      ).rejects.toThrow(LockNotAcquiredError);
    });
  });

  it("a model's abandon within the budget reaches the caller, with the model's reasoning", async () => {
    const seen = await run(modelAbandons);
    expect(seen.modelRequests).toBe(1);
    expect(seen.failure).toBeInstanceOf(LockNotAcquiredError);
    expect((seen.failure as LockNotAcquiredError).outcome).toMatchObject({
      status: 'abandoned',
      reason: 'The holder runs a nightly job that will not finish within this wait budget.',
    });
    expect(seen.outcome).toMatchObject({ status: 'abandoned', attempts: 1 });
    expect(seen.queueAfter).toEqual([]);
  });

  it("checks a model's deadlock flag on the service's graph; unconfirmed, escalates with its place kept", async () => {
    const seen = await run(modelFlagsDeadlock);
    expect(seen.escalated.decisions[0]).toMatchObject({ provider: 'anthropic', appliedAs: 'deadlock-check' });
    expect(seen.escalated.escalation?.reason).toMatch(
      /^the decision flagged a deadlock \(replica-a may be waiting on replica-b in turn\.\); the lock service's wait-for graph shows no cycle/,
    );
    expect(seen.queueWhileEscalated).toEqual(['replica-b']);
    expect(seen.outcome).toMatchObject({ status: 'abandoned' });
  });

  it('asks the larger model, with the wait-for edges, for a wait spanning keys; the small one for a wait on one key', async () => {
    const seen = await run(modelByWaitSpan);
    const prompt = (request: typeof seen.multi) => JSON.stringify(request?.body.messages ?? null);
    expect(seen.multi?.body.model).toBe(FAKE_MODEL.largeModel);
    expect(prompt(seen.multi)).toContain(String.raw`- \"job\" waits for \"wanted-`);
    expect(prompt(seen.multi)).toContain(String.raw`- \"other-job\" waits for \"held-`);
    expect(seen.single?.body.model).toBe(FAKE_MODEL.model);
    expect(prompt(seen.single)).toContain(
      String.raw`edges involving this requester or its owner (data):\n- none`,
    );
  });

  it("follows the model's retry, clamped by the harness, then its escalation; the history shows both", async () => {
    const seen = await run(modelClampedThenEscalate);
    expect(seen.outcome).toMatchObject({
      status: 'abandoned',
      reason: expect.stringContaining('holder stuck for too long'),
      attempts: 2,
    });
    // The model asked for an hour; the harness slept 250 ms (its maxBackoffMs) and says so.
    expect(seen.timerSummaries).toEqual([
      'backoff 250 ms, exponential, attempt 1 of 21 (asked 3600000 ms, clamped): The holder is busy; wait a little.',
      'wait for operator, up to 1000 ms',
    ]);
    expect(seen.activitySummaries).toEqual([
      'check the request, fast path, attempt 1',
      'retry decision, attempt 1',
      'fast path, attempt 2',
      'retry decision, attempt 2',
      'leave the queue: escalated',
      'page on-call: holder stuck for too long',
    ]);
    expect(seen.modelRequests).toBe(2);
    // The advisory renewal text was never acted on: the incumbent still holds the lease it had.
    expect(seen.holderAfter).toBe('replica-a');
  });

  it('escalates when the budget is spent even though the model keeps saying retry', async () => {
    const seen = await run(modelOverruledByBudget);
    expect(seen.outcome).toMatchObject({
      status: 'abandoned',
      attempts: 3,
      reason: expect.stringContaining('budget spent (max-retries)'),
    });
    expect(seen.modelRequests).toBe(3); // asked each time, and each time overruled on the third
  });

  it('enforces "must not exceed 2 retries", jitters the model\'s delays, and escalates its abandon on the spent budget', async () => {
    const seen = await run(constraintsEnforced);
    expect(seen.modelRequests).toBe(3);
    expect(seen.escalated.budgetLeft.retries).toBe(0);
    expect(seen.escalated.escalation).toMatchObject({ reason: 'budget spent (max-retries)' });
    const [first, second, third] = seen.escalated.decisions;
    for (const retry of [first, second]) {
      expect(retry).toMatchObject({ provider: 'anthropic', retryAfterMs: 300, appliedAs: 'backoff' });
      expect(retry!.appliedMs).toBeGreaterThanOrEqual(240);
      expect(retry!.appliedMs).toBeLessThanOrEqual(360);
    }
    expect(third).toMatchObject({ decision: 'abandon', appliedAs: 'escalate', appliedMs: null });
    // Nobody answered the page: the escalation timed out.
    expect(seen.outcome).toMatchObject({ status: 'abandoned', attempts: 3 });
  });

  it('finds a deadlock between two sessions from the service holdings: both stop, one escalation for the cycle', async () => {
    const seen = await run(deadlock);
    // The cycle as edges: each waiter waits for a key the other holds.
    const edges = (outcome: unknown) =>
      (outcome as { deadlock: { cycle: { waiter: string; key: string; holder: string }[] } }).deadlock.cycle;
    expect(seen.betaOutcome).toMatchObject({
      status: 'halted',
      reason: expect.stringContaining('escalated by alpha'),
      deadlock: { escalator: 'alpha' },
    });
    const cycle = edges(seen.betaOutcome);
    expect(cycle.map((e) => `${e.waiter}>${e.holder}`).sort()).toEqual(['alpha>beta', 'beta>alpha']);
    expect(cycle.map((e) => e.key).sort()).toEqual([...seen.keys].sort());
    expect(seen.alphaEscalated.escalation).toMatchObject({
      deadlock: true,
      reason: expect.stringMatching(
        /^deadlock: (alpha waits for \S+ held by beta|beta waits for \S+ held by alpha); (alpha|beta) waits/,
      ),
    });
    expect(seen.escalationsRecorded).toBe(1);
    expect(seen.alphaOutcome).toMatchObject({
      status: 'abandoned',
      reason: 'abandoned by bob: breaking the cycle',
    });
    // Each key's post-mortem names the lock inversion, with the cycle's two waiters as the threads.
    for (const key of seen.keys) {
      let events: Awaited<ReturnType<typeof readIncidentLog>> = [];
      await waitFor('the sessions in visibility', async () => {
        events = await readIncidentLog({ client: fixture.env.client, key });
        return events.filter((e) => e.kind === 'ended').length === 2;
      });
      const timeline = buildTimeline(key, events);
      expect(timeline.mechanism).toMatchObject({ kind: 'lock-inversion', escalator: 'alpha' });
      const found = timeline.mechanism.kind === 'lock-inversion' ? timeline.mechanism.cycle : [];
      expect(found).toHaveLength(2);
      expect(found).toEqual(expect.arrayContaining(cycle));
      expect(timeline.threads).toEqual([
        { label: 'Thread A', session: 'alpha' },
        { label: 'Thread B', session: 'beta' },
      ]);
      const facts = {
        firm: 'F',
        stakeholder: 'S',
        job: 'reconciliation',
        timeline,
        evidence: NO_EVIDENCE,
        gates: GATES,
      };
      const briefing = renderBriefing(facts);
      expect(briefing.subject).toMatch(/^\[reconciliation\] SEV-2 lock inversion: /);
      expect(validateBriefing(briefing, timeline, { modelDrafted: false })).toEqual([]);
    }
  });

  it('ends the hold as lease-lost when the service shows another token, and renews nothing with it', async () => {
    const seen = await run(leaseLost);
    expect(seen.releasedOutside).toMatchObject({ ok: true });
    expect(seen.outcome).toMatchObject({
      status: 'lease-lost',
      reason: expect.stringContaining(
        `token ${seen.intruder.token} for replica-b, not token ${seen.lease.token}`,
      ),
    });
    expect(seen.serviceAfter).toMatchObject({
      holder: 'replica-b',
      token: seen.intruder.token,
      leaseUntil: seen.intruder.leaseUntil,
    });
    // Its keeper found the other token at a renewal, and the hold ended there.
    expect(seen.activitySummaries.filter((s) => s.startsWith(`keep token ${seen.lease.token}`))).toHaveLength(
      1,
    );
  });

  it('lets the lease go by itself, fenced, at its hold limit and when its holder sends no keep-alive, and says which', async () => {
    const seen = await run(holdEndsByItself);
    // Tokens come from one sequence per lock service: each outcome names its own lease's.
    const tokens = [seen.limitOutcome, seen.goneOutcome].map((o) =>
      'lease' in o ? o.lease?.token : undefined,
    );
    expect(seen.limitOutcome).toMatchObject({
      status: 'lease-lost',
      reason: `the hold limit of 1500 ms was reached: released token ${tokens[0]}, fenced`,
    });
    expect(seen.goneOutcome).toMatchObject({
      status: 'lease-lost',
      reason: `no keep-alive from the holder within 3000 ms: released token ${tokens[1]}, fenced`,
    });
    // Released, not run out: both keys are free while their leases (30 s TTL) would still stand.
    seen.keysAfter.forEach((after, i) => expect(after).toMatchObject({ holder: null, lastToken: tokens[i] }));
  });

  it('runs a job under withLock from another workflow and releases the lock after it', async () => {
    const seen = await run(withLockHoldLockFor);
    expect(seen.lease).toMatchObject({ key: seen.key, holder: 'nightly-job', token: '1' });
    expect(seen.holderAfter).toBeNull();
    expect(seen.sessionOutcome).toMatchObject({ status: 'released' });
  });

  it("reads a key's holder, token and queue for lockctl status through a workflow on the worker", async () => {
    const seen = await run(lockStatusOfQueue);
    expect(seen.status).toMatchObject({
      backend: 'sqlite',
      holder: 'owner',
      token: seen.held.token,
      lastToken: seen.held.token,
      queue: [{ place: 1, requester: 'waiter', priority: 0 }],
    });
    expect(seen.status.leaseLeftMs).toBeGreaterThan(50_000);
    expect(seen.status.leaseLeftMs).toBeLessThanOrEqual(60_000);
    expect(seen.status.queue[0]!.waitingMs).toBeGreaterThanOrEqual(0);
    expect(seen.status.queue[0]!.ticketLeftMs).toBeGreaterThan(20_000);
  });

  it("force-releases through a fenced workflow: the holder's own older token is refused and the holder keeps the lease", async () => {
    const seen = await run(releaseLockFenced);
    expect(BigInt(seen.tokens.stale)).toBeLessThan(BigInt(seen.tokens.held));
    expect(seen.stale).toMatchObject({ ok: false, reason: 'stale-token' });
    expect(seen.holderAfterStale).toBe('owner');
    expect(seen.current).toMatchObject({ ok: true });
    expect(seen.holderAfter).toBeNull();
  });

  /** Runs `fn` with a loopback on-call webhook; `received` collects the JSON bodies posted to it. */
  async function withWebhook(fn: (webhookUrl: string, received: unknown[]) => Promise<void>): Promise<void> {
    const received: unknown[] = [];
    const hook = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    try {
      await fn(`http://127.0.0.1:${(hook.address() as AddressInfo).port}/page`, received);
    } finally {
      hook.close();
    }
  }
  const oncallAt = (webhookUrl: string) => ({ webhookUrl, reviewWindowMs: 600_000, reviewThreshold: 3 });

  it('pages on-call through the webhook with the documented payload', async () => {
    await fixture.locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    await withWebhook(async (webhookUrl, received) => {
      await withWorker(fixture.env, { ...deps(), oncall: oncallAt(webhookUrl) }, async (taskQueue) => {
        const session = await startAcquisition(
          fixture.env.client,
          { key, requester: 'replica-b', budget: { maxRetries: 0 }, escalationTimeoutMs: 1_000 },
          { taskQueue },
        );
        await session.result();
        expect(received).toEqual([
          expect.objectContaining({
            type: 'lockwarden.escalation',
            key,
            requester: 'replica-b',
            workflowId: session.workflowId,
            reason: 'budget spent (max-retries)',
            deadlock: false,
            attempts: 1,
            // The contention, as the session last saw it: who holds, why it was denied, its place.
            contention: {
              holder: 'stuck-job',
              errorCode: 'HELD',
              place: 1,
              waiters: 0,
              budgetLeft: { retries: 0, waitMs: expect.any(Number) },
              lastDecisions: [
                {
                  attempt: 1,
                  provider: 'policy',
                  decision: expect.any(String),
                  retryAfterMs: expect.any(Number),
                },
              ],
            },
            flaggedForReview: false,
            resolve: expect.objectContaining({
              update: 'resolveEscalation',
              signal: 'resolveEscalation',
              workflowId: session.workflowId,
            }),
          }),
        ]);
      });
    });
  });

  it('pages whom a constraint names, and keeps a constraint in no known form as advisory, said so', async () => {
    await fixture.locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const constraints = ['Must escalate to #payments-oncall after 1 s', 'Comply with SOX change windows'];
    await withWebhook(async (webhookUrl, received) => {
      await withWorker(fixture.env, { ...deps(), log, oncall: oncallAt(webhookUrl) }, async (taskQueue) => {
        const session = await startAcquisition(
          fixture.env.client,
          { key, requester: 'replica-b', constraints, wakeOnRelease: false, escalationTimeoutMs: 60_000 },
          { taskQueue },
        );
        await waitFor('paged', async () => received.length === 1);
        // Paged for its 1 s budget (spent, or past 80% of it: the policy's rule 3), to the contact named.
        expect(received[0]).toMatchObject({ contact: '#payments-oncall', key });
        const state = await stateOf(fixture.env.client, session.workflowId);
        expect(state).toMatchObject({
          constraintsNotEnforced: ['Comply with SOX change windows'],
          escalationContact: '#payments-oncall',
        });
        // The store is written after the webhook is posted: wait for it.
        await waitFor('the escalation recorded', async () => (await escalations.recordsOf(key)).length > 0);
        expect(await escalations.recordsOf(key)).toEqual([
          expect.objectContaining({ contact: '#payments-oncall' }),
        ]);
        expect(lines).toContainEqual(
          expect.objectContaining({
            event: 'constraints.not-enforced',
            key,
            constraints: ['Comply with SOX change windows'],
          }),
        );
        await resolve(fixture.env.client, session.workflowId, {
          action: 'abandon',
          operator: 'ops',
          reason: 'test',
        });
        await session.result();
      });
    });
    // A worker whose operator enforces constraints strictly refuses the same request, naming it.
    await withWorker(fixture.env, { ...deps(), strictConstraints: true }, async (taskQueue) => {
      const refused = startAcquisition(
        fixture.env.client,
        { key, requester: 'replica-c', constraints },
        { taskQueue },
      ).then((s) => s.result());
      await expect(refused).rejects.toMatchObject({
        cause: {
          type: 'InvalidLockRequest',
          message: expect.stringMatching(
            /constraints\.1: "Comply with SOX change windows" is not understood, and this worker enforces constraints strictly/,
          ),
        },
      });
    });
  });

  it('tells on-call through the webhook, and in the record, when an escalation resolved itself', async () => {
    await withWebhook(async (webhookUrl, received) => {
      await withWorker(fixture.env, { ...deps(), oncall: oncallAt(webhookUrl) }, async (taskQueue) => {
        const holder = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
        const waiter = await startAcquisition(
          fixture.env.client,
          { key, requester: 'replica-b', budget: { maxRetries: 0 }, escalationTimeoutMs: 120_000 },
          { taskQueue },
        );
        await waitFor('paged', async () => received.length === 1);
        await release(fixture.env.client, holder.lease);
        const next = await awaitLeaseOf(fixture.env.client, waiter.workflowId);
        expect(next).toMatchObject({ status: 'acquired', lease: { holder: 'replica-b' } });
        await waitFor('resolution sent', async () => received.length === 2);
        expect(received[1]).toEqual({
          type: 'lockwarden.escalation-resolved',
          at: expect.any(String),
          key,
          requester: 'replica-b',
          workflowId: waiter.workflowId,
          reason: 'budget spent (max-retries)',
          deadlock: false,
          attempts: 2,
          waitedMs: expect.any(Number),
          // The escalation's own fields, its contention included (as it was when on-call was paged).
          contention: expect.objectContaining({ holder: 'holder', errorCode: 'HELD' }),
          resolution: 'acquired',
        });
        const lines = (await fs.readFile(escalationsFile, 'utf8'))
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        expect(lines.map((l: { resolution?: string }) => l.resolution ?? 'escalated')).toEqual([
          'escalated',
          'acquired',
        ]);
        // The record carries the contention too: what on-call reads later, without the session.
        expect(lines[0]).toMatchObject({ contention: { holder: 'holder', errorCode: 'HELD', place: 1 } });
        await release(fixture.env.client, { key, holder: 'replica-b' });
      });
    });
  });

  it('flags a key that keeps escalating for deadlock review: a log line, a metric and a search attribute', async () => {
    await fixture.locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const metrics = createMetrics({ keyLabels: true });
    await withWorker(
      fixture.env,
      { ...deps(), log, metrics, oncall: { webhookUrl: null, reviewWindowMs: 600_000, reviewThreshold: 3 } },
      async (taskQueue) => {
        const sessions = [];
        for (const requester of ['w1', 'w2', 'w3']) {
          const session = await startAcquisition(
            fixture.env.client,
            { key, requester, budget: { maxRetries: 0 }, escalationTimeoutMs: 1_000 },
            { taskQueue },
          );
          await session.result();
          sessions.push(session);
        }
        const review = async (workflowId: string) =>
          (await fixture.env.client.workflow.getHandle(workflowId).describe()).typedSearchAttributes.get(
            SEARCH_ATTRIBUTES.lockReview,
          );
        expect(await review(sessions[0]!.workflowId)).toBeUndefined();
        expect(await review(sessions[2]!.workflowId)).toBe(true);
        expect((await metrics.keysFlaggedForReview.get()).values).toEqual([{ value: 1, labels: { key } }]);
        const flagged = lines
          .map((l) => JSON.parse(l) as { event?: string; key?: string })
          .filter((l) => l.event === 'lock.flagged-for-review');
        expect(flagged).toEqual([expect.objectContaining({ key, recentEscalations: 3 })]);
      },
    );
  });

  it('withLock does not wait on a session that failed before it could tell of the lease', async () => {
    await withWorker(fixture.env, deps(), async (taskQueue) => {
      const job = fixture.env.client.workflow.execute('holdLockFor', {
        taskQueue,
        workflowId: unique('job'),
        args: [{ key: 'bad', requester: unique('r'), ttlMs: -5 }, 100],
      });
      await expect(job).rejects.toThrow(WorkflowFailedError);
      expect((await fixture.locks.inspect('bad')).lastToken).toBeNull();
    });
  });

  it('withLock stops its job and throws LeaseLost when the lease is lost while the job runs, not with a signal error', async () => {
    const seen = await run(withLockStoppedOnLoss);
    expect(seen.intruder.granted).toBe(true);
    expect(seen.failure).toBeInstanceOf(ApplicationFailure);
    expect((seen.failure as ApplicationFailure).type).toBe('LeaseLost');
    expect(seen.sessionOutcome).toMatchObject({ status: 'lease-lost' });
    // The job's minute-long hold was cut short when the loss was known, not waited out.
    expect(seen.timerSummaries).toEqual([expect.stringMatching(/^hold stopped-.+ for 60000 ms$/)]);
    expect(seen.failedAfterMs).toBeLessThan(60_000);
  });

  it('keeps sessions whose names used to collide apart, and acts on a lease only for its own key and holder', async () => {
    await withWorker(fixture.env, deps(), async (taskQueue) => {
      // "<p>/a/b" + "c" and "<p>/a" + "b/c" once made the same id; <p> is new each run, so a run
      // killed before its releases leaves nothing the next run trips over.
      const p = unique('collide');
      const slashInKey = await acquire(
        fixture.env.client,
        { key: `${p}/a/b`, requester: 'c' },
        { taskQueue },
      );
      const slashInRequester = await acquire(
        fixture.env.client,
        { key: `${p}/a`, requester: 'b/c' },
        { taskQueue },
      );
      expect(slashInKey.session.workflowId).toBe(`lock/${p}/a/b/c`);
      expect(slashInRequester.session.workflowId).toBe(`lock/${p}/a/b%2Fc`);

      // A release naming another lease is refused by the session before it is accepted.
      const handle = fixture.env.client.workflow.getHandle(slashInKey.session.workflowId);
      const refusal = await handle
        .executeUpdate(releaseLease, {
          args: [{ key: `${p}/a`, holder: 'b/c' }, slashInRequester.session.releaseKey],
        })
        .then(
          () => null,
          (error: Error & { cause?: Error }) => error.cause?.message ?? error.message,
        );
      expect(refusal).toBe(`release refused: this session is "c" on "${p}/a/b", not "b/c" on "${p}/a"`);
      // A fire-and-forget request naming another lease is ignored.
      await handle.signal(
        requestRelease,
        { key: `${p}/a`, holder: 'b/c' },
        slashInRequester.session.releaseKey,
      );
      expect(await stateOf(fixture.env.client, slashInKey.session.workflowId)).toMatchObject({
        phase: 'holding',
      });

      // Each caller releases its own lease, and only it.
      expect(await release(fixture.env.client, slashInRequester.lease)).toMatchObject({ ok: true });
      expect((await fixture.locks.inspect(`${p}/a/b`)).holder).toBe('c');
      expect((await fixture.locks.inspect(`${p}/a`)).holder).toBeNull();
      expect(await release(fixture.env.client, slashInKey.lease)).toMatchObject({ ok: true });
    });
  });

  it('fails a malformed request fast, with a non-retryable typed failure, before touching the lock service', async () => {
    await expect(startAcquisition(fixture.env.client, { key: '', requester: 'x' })).rejects.toThrow(
      InvalidLockRequestError,
    );
    await withWorker(fixture.env, deps(), async (taskQueue) => {
      const handle = await fixture.env.client.workflow.start('acquireLock', {
        taskQueue,
        workflowId: acquisitionWorkflowId('bad', unique('r')),
        args: [{ key: 'bad', requester: 'r', ttlMs: -5 }],
      });
      const failure = handle.result();
      await expect(failure).rejects.toThrow(WorkflowFailedError);
      await expect(failure).rejects.toMatchObject({
        cause: {
          type: 'InvalidLockRequest',
          nonRetryable: true,
          message: expect.stringContaining('ttlMs: must be greater than 0'),
        },
      });
      expect((await fixture.locks.inspect('bad')).lastToken).toBeNull();
    });
  });
});
