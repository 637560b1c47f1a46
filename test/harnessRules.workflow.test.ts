import pino from 'pino';
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

  it("jitters a model's delay within ±20 % and records it as applied; a parked waiter's delay gives way to the park", async () => {
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
      const [parked] = (await stateOf(fixture.env.client, parks.workflowId)).decisions;
      expect(parked).toMatchObject({ provider: 'anthropic', retryAfterMs: 1_000, appliedAs: 'park' });
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
});
