import Database from 'better-sqlite3';
import pino from 'pino';
import { FileEscalationStore } from '../activities/escalationStore';
import { createMetrics } from '../activities/metrics';
import { SqliteLockService } from '../locks/sqliteLockService';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';
import { freshSqlitePath } from '../devkit/tempFiles';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { release, resolve, startAcquisition, stateOf, acquire } from '../client/lockwardenClient';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { VALID_DECISION } from '../devkit/decisionInputs';
import { FAKE_MODEL } from './support/runScenario';
import { sessionFixture, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// Seed 000's harness rules in a running session: constraints enforced as hard limits, a model's delay
// jittered client-side, and one log line per decision plus one for the outcome, joined by session id.
describe('the harness rules of seed 000', () => {
  const fixture = sessionFixture();
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const model = new FakeMessagesApi();

  beforeAll(() => model.start());
  afterAll(() => model.stop());
  beforeEach(() => void (lines.length = 0));

  const phaseIs = (workflowId: string, phase: string) => async () =>
    (await stateOf(fixture.env.client, workflowId)).phase === phase;

  it('enforces "must not exceed 3 retries" as the budget, logs each decision and the outcome', async () => {
    const key = unique('constrained');
    await withWorker(fixture.env, { locks: fixture.locks, log }, async (taskQueue) => {
      const held = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
      // Backs off (no park): every attempt asks for a decision, and the fourth attempt spends the budget.
      const waiter = await startAcquisition(
        fixture.env.client,
        {
          key,
          requester: 'waiter',
          wakeOnRelease: false,
          constraints: ['Must not exceed 3 retries'],
          budget: { baseBackoffMs: 50, maxBackoffMs: 100 },
        },
        { taskQueue },
      );
      await waitFor('escalated', phaseIs(waiter.workflowId, 'escalated'));
      const state = await stateOf(fixture.env.client, waiter.workflowId);
      expect(state.attempts).toBe(4);
      expect(state.escalation).toMatchObject({ reason: 'budget spent (max-retries)' });
      await resolve(fixture.env.client, waiter.workflowId, {
        action: 'abandon',
        operator: 'ops',
        reason: 'constraint reached',
      });
      await waiter.result();
      await release(fixture.env.client, held.lease);
      await waitFor('the outcome line', async () =>
        lines.some((l) => l.event === 'acquisition-outcome' && l.sessionId === waiter.workflowId),
      );
      const mine = lines.filter((l) => l.sessionId === waiter.workflowId);
      const decisions = mine.filter((l) => l.event === 'retry-decision');
      expect(decisions.map((l) => l.attempt)).toEqual([1, 2, 3, 4]);
      for (const line of decisions.slice(0, 3))
        expect(line).toMatchObject({
          key,
          provider: 'policy',
          decision: 'retry',
          appliedAs: 'backoff',
          backoffAppliedMs: expect.any(Number),
          backoffRequestedMs: expect.any(Number),
        });
      expect(decisions[3]).toMatchObject({ appliedAs: 'escalate', backoffAppliedMs: null });
      expect(mine.filter((l) => l.event === 'acquisition-outcome')).toEqual([
        expect.objectContaining({ key, outcome: 'abandoned', attempts: 4, escalations: 1 }),
      ]);
    });
  });

  it('logs and counts each decision by its starvation risk, and flags a key whose decisions keep saying high', async () => {
    const key = unique('starving');
    const metrics = createMetrics();
    const oncall = { webhookUrl: null, reviewWindowMs: 60_000, reviewThreshold: 2 };
    await withWorker(fixture.env, { locks: fixture.locks, log, metrics, oncall }, async (taskQueue) => {
      const held = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
      // Backs off (no park) on a one-second budget: past half of it, every decision says high.
      const waiter = await startAcquisition(
        fixture.env.client,
        {
          key,
          requester: 'waiter',
          wakeOnRelease: false,
          budget: { baseBackoffMs: 200, maxBackoffMs: 300, maxTotalWaitMs: 1_000, maxRetries: 20 },
        },
        { taskQueue },
      );
      await waitFor('escalated', phaseIs(waiter.workflowId, 'escalated'));
      await resolve(fixture.env.client, waiter.workflowId, {
        action: 'abandon',
        operator: 'ops',
        reason: 'test',
      });
      await waiter.result();
      await release(fixture.env.client, held.lease);
    });
    const decisions = lines.filter((l) => l.event === 'retry-decision' && l.key === key);
    const risks = decisions.map((l) => l.starvationRisk);
    expect(risks[0]).not.toBe('high');
    expect(risks.filter((r) => r === 'high').length).toBeGreaterThanOrEqual(2);
    const counted = await metrics.registry.getSingleMetricAsString('lockwarden_starvation_risk_total');
    expect(counted).toContain(
      `lockwarden_starvation_risk_total{level="high"} ${risks.filter((r) => r === 'high').length}`,
    );
    // Flagged once, for its decisions: one escalation alone is under the review threshold of 2.
    expect(lines.filter((l) => l.event === 'lock.flagged-for-review' && l.key === key)).toEqual([
      expect.objectContaining({ reason: 'starvation-risk', highRiskDecisions: 2 }),
    ]);
    expect(
      await metrics.registry.getSingleMetricAsString('lockwarden_keys_flagged_for_review_total'),
    ).toContain('lockwarden_keys_flagged_for_review_total 1');
  });

  it("jitters a model's delay within ±20 % and records it as applied, parked or not; a park ends at the delay", async () => {
    const key = unique('jittered');
    const asked = { ...VALID_DECISION, retry_after_ms: 1_000 };
    model.answer(...Array.from({ length: 6 }, () => ({ kind: 'tool' as const, input: asked })));
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: model.baseURL });
    await withWorker(fixture.env, { locks: fixture.locks, log, decider }, async (taskQueue) => {
      const held = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
      const backsOff = await startAcquisition(
        fixture.env.client,
        { key, requester: 'backs-off', wakeOnRelease: false, fairness: 'no-starvation-guarantee' },
        { taskQueue },
      );
      const parks = await startAcquisition(fixture.env.client, { key, requester: 'parks' }, { taskQueue });
      await waitFor('both decided', async () => {
        const states = await Promise.all(
          [backsOff, parks].map((s) => stateOf(fixture.env.client, s.workflowId)),
        );
        return states.every((s) => s.decisions.length > 0);
      });
      const [first] = (await stateOf(fixture.env.client, backsOff.workflowId)).decisions;
      expect(first).toMatchObject({ provider: 'anthropic', retryAfterMs: 1_000, appliedAs: 'backoff' });
      expect(first!.appliedMs).toBeGreaterThanOrEqual(800);
      expect(first!.appliedMs).toBeLessThanOrEqual(1_200);
      // The holder's lease has most of its 30 s left: the model's shorter delay ends the park.
      const [parked] = (await stateOf(fixture.env.client, parks.workflowId)).decisions;
      expect(parked).toMatchObject({
        provider: 'anthropic',
        retryAfterMs: 1_000,
        appliedAs: 'park-for-delay',
      });
      expect(parked!.appliedMs).toBeGreaterThanOrEqual(800);
      expect(parked!.appliedMs).toBeLessThanOrEqual(1_200);
      await release(fixture.env.client, held.lease);
      // Whichever holds next is released, until both have held.
      for (const pending = [backsOff, parks]; pending.length;) {
        let holding: (typeof pending)[number] | undefined;
        await waitFor('one holding', async () => {
          const states = await Promise.all(pending.map((s) => stateOf(fixture.env.client, s.workflowId)));
          holding = pending[states.findIndex((s) => s.phase === 'holding')];
          return holding !== undefined;
        });
        const { lease } = await stateOf(fixture.env.client, holding!.workflowId);
        await release(fixture.env.client, lease!);
        await holding!.result();
        pending.splice(pending.indexOf(holding!), 1);
      }
      const outcomes = lines.filter((l) => l.event === 'acquisition-outcome').map((l) => l.outcome);
      expect(outcomes).toEqual(['acquired', 'acquired', 'acquired']);
    });
  });

  it("parks until told when the model's delay is longer than the holder's lease left", async () => {
    const key = unique('outwaits');
    model.answer({ kind: 'tool', input: { ...VALID_DECISION, retry_after_ms: 20_000 } });
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: model.baseURL });
    await withWorker(fixture.env, { locks: fixture.locks, log, decider }, async (taskQueue) => {
      const held = await acquire(
        fixture.env.client,
        { key, requester: 'holder', ttlMs: 5_000 },
        { taskQueue },
      );
      const parks = await startAcquisition(
        fixture.env.client,
        { key, requester: 'parks', budget: { maxBackoffMs: 30_000 } },
        { taskQueue },
      );
      await waitFor(
        'decided',
        async () => (await stateOf(fixture.env.client, parks.workflowId)).decisions.length > 0,
      );
      const [parked] = (await stateOf(fixture.env.client, parks.workflowId)).decisions;
      expect(parked).toMatchObject({ provider: 'anthropic', retryAfterMs: 20_000, appliedAs: 'park' });
      expect(parked!.appliedMs).toBeGreaterThan(30_000);
      await release(fixture.env.client, held.lease);
      await waitFor('parks holding', phaseIs(parks.workflowId, 'holding'));
      await release(fixture.env.client, (await stateOf(fixture.env.client, parks.workflowId)).lease!);
    });
  });

  it('redacts and neutralises what a model says before the state, the UI, the store or a log line sees it', async () => {
    const key = unique('said');
    const escalating = {
      ...VALID_DECISION,
      decision: 'escalate',
      retry_after_ms: null,
      backoff_strategy: null,
      escalation_reason: 'acme-corp payroll\u0007 is stuck: [open](javascript:x) <img src=x>',
      explanation: 'The acme-corp job has not moved.',
    };
    model.answer({ kind: 'tool', input: escalating });
    const decider = createAnthropicDecider({
      ...FAKE_MODEL,
      baseURL: model.baseURL,
      sensitiveTenants: ['acme-corp'],
    });
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log, decider, escalations: fixture.escalations },
      async (taskQueue) => {
        const held = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
        const waiter = await startAcquisition(
          fixture.env.client,
          { key, requester: 'waiter', wakeOnRelease: false },
          { taskQueue },
        );
        await waitFor('escalated', phaseIs(waiter.workflowId, 'escalated'));
        const inert = '[tenant] payroll is stuck: \\[open\\](javascript:x) \\<img src=x\\>';
        expect((await stateOf(fixture.env.client, waiter.workflowId)).escalation?.reason).toBe(inert);
        expect(await fixture.escalations.recordsOf(key)).toEqual([
          expect.objectContaining({ reason: inert }),
        ]);
        const details = await fixture.env.client.workflow.getHandle(waiter.workflowId).describe();
        expect(JSON.stringify(details.raw)).not.toContain('acme-corp');
        expect(JSON.stringify(lines)).not.toContain('acme-corp');
        await resolve(fixture.env.client, waiter.workflowId, {
          action: 'abandon',
          operator: 'ops',
          reason: 'test',
        });
        await waiter.result();
        await release(fixture.env.client, held.lease);
      },
    );
  });

  it("checks a model's deadlock flag on the lock service's graph: unconfirmed, a human decides and the place is kept", async () => {
    const key = unique('flagged');
    const flagged = {
      ...VALID_DECISION,
      deadlock_detected: true,
      explanation: 'replica-a waits on replica-b which waits on replica-a',
    };
    model.answer({ kind: 'tool', input: flagged });
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: model.baseURL });
    await withWorker(fixture.env, { locks: fixture.locks, log, decider }, async (taskQueue) => {
      const held = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
      const waiter = await startAcquisition(fixture.env.client, { key, requester: 'waiter' }, { taskQueue });
      await waitFor('escalated', phaseIs(waiter.workflowId, 'escalated'));
      const state = await stateOf(fixture.env.client, waiter.workflowId);
      expect(state.decisions[0]).toMatchObject({ provider: 'anthropic', appliedAs: 'deadlock-check' });
      expect(state.escalation?.reason).toBe(
        'the decision flagged a deadlock (replica-a waits on replica-b which waits on replica-a); ' +
          "the lock service's wait-for graph shows no cycle through this session: a human decides",
      );
      expect(state.escalation).toMatchObject({ deadlock: false });
      // Its place is kept: the release hands it the key, which resolves the escalation.
      expect((await fixture.locks.inspect(key)).waiters).toEqual(['waiter']);
      await release(fixture.env.client, held.lease);
      await waitFor('waiter holding', phaseIs(waiter.workflowId, 'holding'));
      expect((await stateOf(fixture.env.client, waiter.workflowId)).escalation).toMatchObject({
        resolution: 'acquired',
      });
      await release(fixture.env.client, (await stateOf(fixture.env.client, waiter.workflowId)).lease!);
    });
  });

  it('escalates a waiter a later arrival was put ahead of (planted through the raw SQLite table) as fairness-violation', async () => {
    const key = unique('overtaken');
    const path = freshSqlitePath();
    const locks = new SqliteLockService({ path });
    try {
      await withWorker(fixture.env, { locks, log }, async (taskQueue) => {
        const held = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
        const old = await startAcquisition(fixture.env.client, { key, requester: 'old' }, { taskQueue });
        await waitFor('old queued', phaseIs(old.workflowId, 'queued'));
        const young = await startAcquisition(fixture.env.client, { key, requester: 'young' }, { taskQueue });
        await waitFor('young queued', phaseIs(young.workflowId, 'queued'));
        // What a buggy or tampered service would do: the younger ticket moved ahead of the older one.
        const raw = new Database(path);
        raw.prepare("UPDATE lock_waiters SET seq = 0 WHERE key = ? AND requester = 'young'").run(key);
        raw.close();
        expect((await locks.inspect(key)).waiters).toEqual(['young', 'old']);
        await release(fixture.env.client, held.lease);
        await waitFor('old escalated', phaseIs(old.workflowId, 'escalated'));
        const state = await stateOf(fixture.env.client, old.workflowId);
        expect(state.escalation?.reason).toMatch(
          /^fairness-violation: young \(queued at .+\) was put ahead of old \(queued at .+\) on /,
        );
        expect(lines).toContainEqual(
          expect.objectContaining({ event: 'lock.fairness-violation', waiter: 'old', overtakenBy: 'young' }),
        );
        // The head took the key; the overtaken waiter kept its place, and takes the key next.
        await waitFor('young holding', phaseIs(young.workflowId, 'holding'));
        await release(fixture.env.client, (await stateOf(fixture.env.client, young.workflowId)).lease!);
        await waitFor('old holding', phaseIs(old.workflowId, 'holding'));
        expect((await stateOf(fixture.env.client, old.workflowId)).escalation).toMatchObject({
          resolution: 'acquired',
        });
        await release(fixture.env.client, (await stateOf(fixture.env.client, old.workflowId)).lease!);
      });
    } finally {
      await locks.close();
    }
  });

  it("counts a key's escalations across workers for the review threshold, each worker with its own store", async () => {
    const key = unique('starving');
    await fixture.locks.tryAcquire({ key, requester: 'stuck-job', ttlMs: 60_000 });
    const oncall = { webhookUrl: null, reviewWindowMs: 600_000, reviewThreshold: 3 };
    const worker = (name: string) => ({
      locks: fixture.locks,
      log,
      oncall,
      escalations: new FileEscalationStore(freshSqlitePath().replace(/\.sqlite$/, `-${name}.jsonl`)),
    });
    await withWorker(fixture.env, worker('a'), (onA) =>
      withWorker(fixture.env, worker('b'), async (onB) => {
        const sessions = [];
        // Escalates at once (no retry in its budget), and nobody answers: ended a second later.
        for (const [requester, taskQueue] of [
          ['w1', onA],
          ['w2', onB],
          ['w3', onA],
        ] as const) {
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
        // Worker a's store holds w1 alone: only the count across workers reaches three at w3.
        expect(await review(sessions[1]!.workflowId)).toBeUndefined();
        expect(await review(sessions[2]!.workflowId)).toBe(true);
        expect(lines.filter((l) => l.event === 'lock.flagged-for-review')).toEqual([
          expect.objectContaining({ key, recentEscalations: 3 }),
        ]);
      }),
    );
  });
});
