import { createAnthropicDecider } from '../activities/anthropicDecider';
import { FileEscalationStore } from '../activities/escalationStore';
import { acquire, awaitLeaseOf, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import type { LockService } from '../locks/lockService';
import type { TryAcquireRequest } from '../policy/lockContract/lockSchemas';
import { VALID_DECISION } from '../devkit/decisionInputs';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { activitySummaries, cancelledTimerSummaries, timerSummaries } from '../devkit/history';
import { FAKE_MODEL, runScenario } from './support/runScenario';
import { wokenDuringDecision } from './support/scenarios';
import { freshSqlitePath } from '../devkit/tempFiles';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// How sessions wait under contention: parked on one timer, woken by the release in one hop, and no
// wake-up lost whatever the waiter was doing when the release came.

describe('waiting under contention', () => {
  const fixture = sessionFixture();
  let key: string;

  beforeEach(() => {
    key = unique('contended');
  });
  const escalations = new FileEscalationStore(freshSqlitePath().replace(/\.sqlite$/, '.jsonl'));

  const attemptsOf = async (workflowId: string) => (await stateOf(fixture.env.client, workflowId)).attempts;
  const phaseIs = (workflowId: string, phase: string) => async () =>
    (await stateOf(fixture.env.client, workflowId)).phase === phase;

  it('a release skips a head whose session is gone: its ticket is removed and the next waiter is woken', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      const holder = await acquire(client, { key, requester: 'holder' }, { taskQueue });
      const gone = await startAcquisition(client, { key, requester: 'gone' }, { taskQueue });
      await waitFor('the head parked', phaseIs(gone.workflowId, 'queued'));
      const next = await startAcquisition(client, { key, requester: 'next' }, { taskQueue });
      await waitFor('the next parked', phaseIs(next.workflowId, 'queued'));
      // An operator terminates the head: no code of it runs, its ticket stays in the queue.
      await client.workflow.getHandle(gone.workflowId).terminate('operator');
      expect(await fixture.locks.position({ key, requester: 'gone' })).toBe(1);

      await release(client, holder.lease);
      expect(await awaitLeaseOf(client, next.workflowId)).toMatchObject({ status: 'acquired' });
      expect(await fixture.locks.position({ key, requester: 'gone' })).toBeNull();
      // The next waiter was woken by the release itself, on its second attempt, not by its timer.
      expect(await attemptsOf(next.workflowId)).toBe(2);
      const history = await client.workflow.getHandle(next.workflowId).fetchHistory();
      const signals = (history.events ?? []).map(
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName,
      );
      expect(signals).toContain('lockReleased');
      await release(client, { key, holder: 'next' });
    });
  });

  it('a waiter behind a gone head takes the lock when a holder no session keeps ran out: the queue sweep wakes it', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      // A lease that nobody renews and no session will report: one taken outside any session.
      const dead = await fixture.locks.tryAcquire({ key, requester: 'dead-holder', ttlMs: 2_000 });
      expect(dead.granted).toBe(true);
      const gone = await startAcquisition(client, { key, requester: 'gone' }, { taskQueue });
      await waitFor('the head parked', phaseIs(gone.workflowId, 'queued'));
      const next = await startAcquisition(client, { key, requester: 'next' }, { taskQueue });
      await waitFor('the next parked', phaseIs(next.workflowId, 'queued'));
      await client.workflow.getHandle(gone.workflowId).terminate('operator');

      // When the dead lease runs out, the worker's queue sweep finds the key free with a queue: it
      // takes the gone head out and wakes the next waiter, granted on its second attempt.
      expect(await awaitLeaseOf(client, next.workflowId)).toMatchObject({
        status: 'acquired',
        lease: { holder: 'next' },
      });
      expect(await attemptsOf(next.workflowId)).toBe(2);
      expect(await fixture.locks.position({ key, requester: 'gone' })).toBeNull();
      await release(client, { key, holder: 'next' });
    });
  });

  it('a head whose session ended between the release and its wake-up: the sweep skips it and wakes the next', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      const holder = await acquire(client, { key, requester: 'holder' }, { taskQueue });
      const head = await startAcquisition(client, { key, requester: 'head' }, { taskQueue });
      await waitFor('the head parked', phaseIs(head.workflowId, 'queued'));
      const next = await startAcquisition(client, { key, requester: 'next' }, { taskQueue });
      await waitFor('the next parked', phaseIs(next.workflowId, 'queued'));
      // The release goes through at the service, and the head's session ends before it acts on it:
      // here the release is made past the session (no wake-up sent) and the head is terminated.
      expect(await fixture.locks.release(holder.lease)).toMatchObject({ ok: true });
      await client.workflow.getHandle(head.workflowId).terminate('operator');
      expect(await awaitLeaseOf(client, next.workflowId)).toMatchObject({
        status: 'acquired',
        lease: { holder: 'next' },
      });
      expect(await attemptsOf(next.workflowId)).toBe(2);
      expect(await fixture.locks.position({ key, requester: 'head' })).toBeNull();
      await release(client, { key, holder: 'next' });
    });
  });

  it('a holder whose session was terminated: its keeper stops, the lease runs out, and the sweep hands the key on', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      const holder = await acquire(client, { key, requester: 'holder', ttlMs: 2_000 }, { taskQueue });
      const waiter = await startAcquisition(client, { key, requester: 'waiter' }, { taskQueue });
      await waitFor('the waiter parked', phaseIs(waiter.workflowId, 'queued'));
      await client.workflow.getHandle(holder.session.workflowId).terminate('operator');
      expect(await awaitLeaseOf(client, waiter.workflowId)).toMatchObject({
        status: 'acquired',
        lease: { holder: 'waiter' },
      });
      expect(BigInt((await stateOf(client, waiter.workflowId)).lease!.token)).toBeGreaterThan(
        BigInt(holder.lease.token),
      );
      await release(client, { key, holder: 'waiter' });
    });
  });

  it('parked waiters make no attempt until woken, and a release wakes exactly the head of the queue', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const holder = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
      const first = await startAcquisition(fixture.env.client, { key, requester: 'first' }, { taskQueue });
      await waitFor('first parked', phaseIs(first.workflowId, 'queued'));
      const second = await startAcquisition(fixture.env.client, { key, requester: 'second' }, { taskQueue });
      await waitFor('second parked', phaseIs(second.workflowId, 'queued'));
      await new Promise((r) => setTimeout(r, 1_000));
      expect([await attemptsOf(first.workflowId), await attemptsOf(second.workflowId)]).toEqual([1, 1]);

      await release(fixture.env.client, holder.lease);
      const firstLease = await awaitLeaseOf(fixture.env.client, first.workflowId);
      expect(firstLease).toMatchObject({ status: 'acquired', lease: { holder: 'first' } });
      // The second waiter was not woken: still parked, still on its first attempt.
      expect(await stateOf(fixture.env.client, second.workflowId)).toMatchObject({
        phase: 'queued',
        attempts: 1,
      });

      await release(fixture.env.client, { key, holder: 'first' });
      expect(await awaitLeaseOf(fixture.env.client, second.workflowId)).toMatchObject({
        status: 'acquired',
        lease: { holder: 'second' },
      });
      expect(await attemptsOf(second.workflowId)).toBe(2);
      await release(fixture.env.client, { key, holder: 'second' });
      // Each waiter asked for one decision (its first denial) and parked on one timer.
      for (const id of [first.workflowId, second.workflowId]) {
        const history = await fixture.env.client.workflow.getHandle(id).fetchHistory();
        expect(activitySummaries(history).filter((s) => s.startsWith('retry decision'))).toHaveLength(1);
        expect(timerSummaries(history).filter((s) => s.startsWith('parked'))).toHaveLength(1);
      }
    });
  });

  it("no waiter watches a renewing holder's lease: all sleep through its renewals, and a grant wakes no one", async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      // A short lease, renewed by its keeper every 666 ms: the lease end moves three times a
      // second, and none of that reaches a parked waiter.
      const holder = await acquire(client, { key, requester: 'holder', ttlMs: 2_000 }, { taskQueue });
      const waiters = [];
      for (const requester of ['w1', 'w2', 'w3']) {
        const started = await startAcquisition(client, { key, requester }, { taskQueue });
        await waitFor(`${requester} parked`, phaseIs(started.workflowId, 'queued'));
        waiters.push(started.workflowId);
      }
      const [w1, w2, w3] = waiters as [string, string, string];
      const leaseEnd = (await fixture.locks.inspect(key)).leaseUntil!;
      await waitFor(
        'two lease ends past',
        async () => (await fixture.locks.inspect(key)).leaseUntil! > leaseEnd + 2_000,
      );
      expect(await Promise.all(waiters.map(attemptsOf))).toEqual([1, 1, 1]);

      await release(client, holder.lease);
      expect(await awaitLeaseOf(client, w1)).toMatchObject({ status: 'acquired', lease: { holder: 'w1' } });
      // w1's grant woke neither waiter behind it.
      expect([await attemptsOf(w2), await attemptsOf(w3)]).toEqual([1, 1]);
      await release(client, { key, holder: 'w1' });
      expect(await awaitLeaseOf(client, w2)).toMatchObject({ status: 'acquired', lease: { holder: 'w2' } });
      expect(await attemptsOf(w3)).toBe(1);
      await release(client, { key, holder: 'w2' });
      expect(await awaitLeaseOf(client, w3)).toMatchObject({ status: 'acquired', lease: { holder: 'w3' } });
      await release(client, { key, holder: 'w3' });
    });
  });

  it('a waiter that leaves the queue behind a holder wakes no one; the release then wakes the new head', async () => {
    await withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, async (taskQueue) => {
      const { client } = fixture.env;
      const holder = await acquire(client, { key, requester: 'holder' }, { taskQueue });
      const ids = [];
      for (const requester of ['w1', 'w2', 'w3']) {
        const started = await startAcquisition(client, { key, requester }, { taskQueue });
        await waitFor(`${requester} parked`, phaseIs(started.workflowId, 'queued'));
        ids.push(started.workflowId);
      }
      const [w1, w2, w3] = ids as [string, string, string];
      // An operator cancels the head: it leaves the queue on its way out.
      await client.workflow.getHandle(w1).cancel();
      await waitFor(
        'the head gone from the queue',
        async () => (await fixture.locks.position({ key, requester: 'w1' })) === null,
      );
      expect(await fixture.locks.position({ key, requester: 'w2' })).toBe(1);
      expect([await attemptsOf(w2), await attemptsOf(w3)]).toEqual([1, 1]);
      await release(client, holder.lease);
      expect(await awaitLeaseOf(client, w2)).toMatchObject({ status: 'acquired', lease: { holder: 'w2' } });
      expect(await attemptsOf(w3)).toBe(1);
      await release(client, { key, holder: 'w2' });
      expect(await awaitLeaseOf(client, w3)).toMatchObject({ status: 'acquired', lease: { holder: 'w3' } });
      await release(client, { key, holder: 'w3' });
    });
  });

  it('waiters evicted from a bounded workflow cache while parked replay when woken and take the lock in order', async () => {
    // A cache of two sessions for a holder and three waiters: parked waiters are evicted, and a
    // woken waiter is rebuilt from its history before it takes its turn.
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog },
      async (taskQueue, worker) => {
        const { client } = fixture.env;
        const cached: number[] = [];
        const holder = await acquire(client, { key, requester: 'holder' }, { taskQueue });
        const ids = [];
        for (const requester of ['w1', 'w2', 'w3']) {
          const started = await startAcquisition(client, { key, requester }, { taskQueue });
          await waitFor(`${requester} parked`, phaseIs(started.workflowId, 'queued'));
          cached.push(worker.getStatus().numCachedWorkflows);
          ids.push(started.workflowId);
        }
        let previous = holder.lease;
        for (const [i, id] of ids.entries()) {
          await release(client, previous);
          const answer = await awaitLeaseOf(client, id);
          expect(answer).toMatchObject({ status: 'acquired', lease: { holder: `w${i + 1}` } });
          if (answer.status === 'acquired') previous = answer.lease;
        }
        await release(client, previous);
        // Four sessions lived at once; the cache never held more than two of them.
        expect(Math.max(...cached)).toBeLessThanOrEqual(2);
        expect(Math.max(...cached)).toBeGreaterThan(0);
      },
      { maxCachedWorkflows: 2 },
    );
  });

  it('no lost wake-up: a release that lands while the waiter runs its fast path ends its park at once', async () => {
    // The waiter's first fast path is held after the lock service denied it, so the release (and its
    // wake-up signal) lands between the denial and the park.
    const slowForWaiter = delayedTryAcquire(fixture.locks, 'waiter', 1_500);
    await withWorker(fixture.env, { locks: slowForWaiter.service, log: silentLog }, async (taskQueue) => {
      const holder = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
      const waiter = await startAcquisition(fixture.env.client, { key, requester: 'waiter' }, { taskQueue });
      await slowForWaiter.denied;
      await release(fixture.env.client, holder.lease);
      expect(await awaitLeaseOf(fixture.env.client, waiter.workflowId)).toMatchObject({ status: 'acquired' });
      // The wake-up that landed early ended the park at once: a timer the denial's own workflow task
      // started (a 60 s one) was cancelled in the next, and the second attempt took the lease.
      const history = await fixture.env.client.workflow.getHandle(waiter.workflowId).fetchHistory();
      const parks = timerSummaries(history).filter((s) => s.startsWith('parked'));
      expect(parks.length).toBeLessThanOrEqual(1);
      expect(cancelledTimerSummaries(history).filter((s) => s.startsWith('parked'))).toEqual(parks);
      expect(await attemptsOf(waiter.workflowId)).toBe(2);
      await release(fixture.env.client, { key, holder: 'waiter' });
    });
  });

  it('no lost wake-up: a first attempt that outlasts its workflow task still counts the wake-up that came meanwhile', async () => {
    // Held 9 s after the denial, the first attempt (made with the request's check) outlasts 80 % of
    // the 10 s workflow-task timeout: the worker ends that task and the wake-up signal reaches the
    // session in the same activation as the attempt's answer, before the session exists to take it.
    const slowForWaiter = delayedTryAcquire(fixture.locks, 'waiter', 9_000);
    await withWorker(fixture.env, { locks: slowForWaiter.service, log: silentLog }, async (taskQueue) => {
      const holder = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
      const waiter = await startAcquisition(
        fixture.env.client,
        { key, requester: 'waiter', budget: { maxTotalWaitMs: 120_000 } },
        { taskQueue },
      );
      await slowForWaiter.denied;
      await release(fixture.env.client, holder.lease);
      expect(await awaitLeaseOf(fixture.env.client, waiter.workflowId)).toMatchObject({ status: 'acquired' });
      const history = await fixture.env.client.workflow.getHandle(waiter.workflowId).fetchHistory();
      expect(activitySummaries(history)[0]).toBe('check the request, fast path, attempt 1');
      expect(timerSummaries(history).filter((s) => s.startsWith('parked'))).toEqual([]);
      await release(fixture.env.client, { key, holder: 'waiter' });
    });
  }, 60_000);

  it('no lost wake-up: a release that lands while the retry decision is being made ends the park at once', async () => {
    const fake = await new FakeMessagesApi().start();
    const retry = { ...VALID_DECISION, retry_after_ms: 100, explanation: 'Wait for the release.' };
    fake.answer({ kind: 'slow', delayMs: 1_500, then: { kind: 'tool', input: retry } });
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: fake.baseURL });
    try {
      await withWorker(fixture.env, { locks: fixture.locks, log: silentLog, decider }, async (taskQueue) => {
        const holder = await acquire(fixture.env.client, { key, requester: 'holder' }, { taskQueue });
        const waiter = await startAcquisition(
          fixture.env.client,
          { key, requester: 'waiter' },
          { taskQueue },
        );
        await waitFor('the decision under way', async () => fake.requests.length > 0);
        await release(fixture.env.client, holder.lease);
        expect(await awaitLeaseOf(fixture.env.client, waiter.workflowId)).toMatchObject({
          status: 'acquired',
        });
        const history = await fixture.env.client.workflow.getHandle(waiter.workflowId).fetchHistory();
        // The wake-up came before the park began: no park timer was needed at all.
        expect(timerSummaries(history).filter((s) => s.startsWith('parked'))).toEqual([]);
        expect(activitySummaries(history).filter((s) => s.includes('fast path, attempt'))).toHaveLength(2);
        await release(fixture.env.client, { key, holder: 'waiter' });
      });
    } finally {
      await fake.stop();
    }
  });

  it('a slow model does not slow a handoff: the release outruns a decision still in flight, which is cancelled', async () => {
    const seen = await runScenario(fixture.env, wokenDuringDecision, {
      locks: fixture.locks,
      log: silentLog,
      escalations,
    });
    if (seen.next.status !== 'acquired') throw new Error(`waiter ended: ${seen.next.outcome.status}`);
    expect(seen.next.lease.grantedAt).toBeGreaterThanOrEqual(seen.releasedAt!);
    // Granted while the model (answering after 2 s) was still thinking: the wake-up did not wait.
    expect(seen.next.lease.grantedAt).toBeLessThan(seen.modelAnswersAt);
    expect(seen.decisionCancelRequests).toBe(1);
    // The cut-short ask left no decision, and the waiter never parked.
    expect(seen.decisions).toEqual([]);
    expect(seen.timerSummaries.filter((s) => s.startsWith('parked'))).toEqual([]);
    expect(seen.activitySummaries.slice(0, 3)).toEqual([
      'check the request, fast path, attempt 1',
      'retry decision, attempt 1',
      'fast path, attempt 2',
    ]);
  });
});

/** The same lock service, with the answer to `requester`'s first tryAcquire held back for `delayMs`. */
function delayedTryAcquire(locks: LockService, requester: string, delayMs: number) {
  let signalDenied: () => void = () => undefined;
  const denied = new Promise<void>((resolve) => (signalDenied = resolve));
  let delayed = false;
  const service: LockService = Object.create(locks) as LockService;
  service.tryAcquire = async (request: TryAcquireRequest) => {
    const answer = await locks.tryAcquire(request);
    if (request.requester === requester && !delayed) {
      delayed = true;
      signalDenied();
      await new Promise((r) => setTimeout(r, delayMs));
    }
    return answer;
  };
  return { service, denied };
}
