import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { EscalationStore } from '../../activities/escalationStore';
import {
  acquire,
  acquisitionWorkflowId,
  awaitLeaseOf,
  forceRelease,
  release,
  resolve,
  startAcquisition,
  stateOf,
} from '../../client/lockwardenClient';
import type { LockService } from '../../locks/lockService';
import { releaseWorkflowId } from '../../policy/constants';
import type { Lease } from '../../policy/lockContract/lockSchemas';
import { resolveEscalationSignal } from '../../temporal/messages';
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes';
import type { FakeAnswer, FakeMessagesApi } from '../../devkit/fakeMessagesApi';
import { activitySummaries, patchIds, timerSummaries } from '../../devkit/history';
import { waitFor } from './waitFor';
import { NO_EVIDENCE } from '../../policy/postmortem/patchEvidence';
import { buildTimeline } from '../../policy/postmortem/timeline';
import type { BriefingResult } from '../../workflows/postmortemBriefing';
import type { lockStatus } from '../../workflows/lockStatus';
import { GATES, PAUSED_PAST_LEASE } from './incidents';

/** What a scenario runs against: a worker on `taskQueue`, its lock service and escalation store. */
export interface ScenarioContext {
  client: Client;
  taskQueue: string;
  locks: LockService;
  escalations: EscalationStore;
  /** The fake Messages API the worker decides through, when the scenario scripts a model. */
  model: FakeMessagesApi | null;
  /** Makes names unique to this run. */
  tag: string;
}

/** What every scenario returns: the workflow ids whose histories are recorded, by history name. */
export interface ScenarioRun {
  histories: Record<string, string>;
}

/**
 * One named path through the workflows, written once: the session tests run it and assert on what it
 * observed; scripts/recordHistories.ts runs it and commits the histories it names for replay.
 */
export interface Scenario<R extends ScenarioRun = ScenarioRun> {
  name: string;
  /** The names of the histories its run records, exactly (the replay suite holds the files to these). */
  histories: readonly string[];
  /** When set, the worker decides through the real SDK against a fake Messages API scripted so. */
  model?: FakeAnswer[];
  run(ctx: ScenarioContext): Promise<R>;
}

const phaseIs = (client: Client, workflowId: string, wanted: string) => async () =>
  (await stateOf(client, workflowId)).phase === wanted;

/** How many times a run asked to cancel an activity of `activityType`. */
function cancelRequestsOf(history: temporal.api.history.v1.IHistory, activityType: string): number {
  const events = history.events ?? [];
  const ofType = new Set(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType)
      .map((e) => String(e.eventId)),
  );
  return events.filter((e) =>
    ofType.has(String(e.activityTaskCancelRequestedEventAttributes?.scheduledEventId ?? '')),
  ).length;
}

const historyOf = (client: Client, workflowId: string): Promise<temporal.api.history.v1.IHistory> =>
  client.workflow.getHandle(workflowId).fetchHistory();

/** Takes `key` for `requester` directly at the lock service (an outside holder). */
async function holdOutside(locks: LockService, key: string, requester: string): Promise<Lease> {
  const held = await locks.tryAcquire({ key, requester, ttlMs: 60_000 });
  if (!held.granted) throw new Error(`scenario setup: ${key} is already held`);
  return held.lease;
}

/** Releases the lease a session holds now, through the session. */
async function releaseHeld(client: Client, workflowId: string) {
  return release(client, (await stateOf(client, workflowId)).lease!);
}

/**
 * Waits until the lock service has extended `lease` twice: the deadlines it reports for the key,
 * still held with the lease's token, past the one it granted. Read at the service, so it holds
 * whoever renews (the workflow, or its lease keeper).
 */
async function renewedTwice(locks: LockService, lease: Lease): Promise<void> {
  const deadlines = new Set<number>();
  await waitFor('two renewals at the lock service', async () => {
    const now = await locks.inspect(lease.key);
    if (now.token !== lease.token)
      throw new Error(`${lease.key} is no longer held with token ${lease.token}`);
    if (now.leaseUntil !== null && now.leaseUntil > lease.leaseUntil) deadlines.add(now.leaseUntil);
    return deadlines.size >= 2;
  });
}

const modelDecision = (patch: Record<string, unknown>): FakeAnswer => ({
  kind: 'tool',
  input: {
    decision: 'retry',
    retry_after_ms: 300,
    backoff_strategy: 'exponential',
    lease_renewal_instruction: null,
    starvation_risk: 'medium',
    deadlock_detected: false,
    escalation_reason: null,
    explanation: 'The holder is busy; wait a little.',
    ...patch,
  },
});

export const fastPathHoldRelease = {
  name: 'session-fast-path-hold-release',
  histories: ['session-fast-path-hold-release'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `fast-${tag}`;
    const { lease, session } = await acquire(
      client,
      { key, requester: 'replica-a', ttlMs: 900 },
      { taskQueue },
    );
    const holding = await stateOf(client, session.workflowId);
    const description = await client.workflow.getHandle(session.workflowId).describe();
    const serviceHolder = (await locks.inspect(key)).holder;
    await renewedTwice(locks, lease);
    const released = await release(client, lease);
    const outcome = await session.result();
    return {
      histories: { 'session-fast-path-hold-release': session.workflowId },
      key,
      lease,
      holding,
      lockState: description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockState),
      lockKey: description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockKey),
      staticSummary: await description.staticSummary(),
      serviceHolder,
      released,
      outcome,
      holderAfter: (await locks.inspect(key)).holder,
    };
  },
} satisfies Scenario;

/**
 * A hold that its lease keeper renews twice, and that is released: one keeper activity for the hold,
 * no renewal in the history, the keeper cancelled by the release. Recorded before and since a hold
 * starts its keeper half a renewal interval in.
 */
async function keptHold({ client, taskQueue, locks, tag }: ScenarioContext, historyName: string) {
  const key = `kept-${tag}`;
  const { lease, session } = await acquire(
    client,
    { key, requester: 'replica-a', ttlMs: 900 },
    { taskQueue },
  );
  await renewedTwice(locks, lease);
  const eventsWhileHeld = (await historyOf(client, session.workflowId)).events?.length ?? 0;
  await renewedTwice(locks, { ...lease, leaseUntil: (await locks.inspect(key)).leaseUntil! });
  const eventsAfterMoreRenewals = (await historyOf(client, session.workflowId)).events?.length ?? 0;
  const released = await release(client, lease);
  const outcome = await session.result();
  const history = await historyOf(client, session.workflowId);
  return {
    histories: { [historyName]: session.workflowId },
    released,
    outcome,
    eventsWhileHeld,
    eventsAfterMoreRenewals,
    activitySummaries: activitySummaries(history),
    timerSummaries: timerSummaries(history),
    keeperCancelRequested: (history.events ?? []).some((e) => e.activityTaskCancelRequestedEventAttributes),
    patches: patchIds(history),
    holderAfter: (await locks.inspect(key)).holder,
  };
}

export const heldByKeeper = {
  name: 'session-held-by-keeper',
  histories: ['session-held-by-keeper'],
  run: (ctx: ScenarioContext) => keptHold(ctx, 'session-held-by-keeper'),
} satisfies Scenario;

export const retryThenAcquire = {
  name: 'session-retry-then-acquire',
  histories: ['session-retry-then-acquire'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `contended-${tag}`;
    const outside = await holdOutside(locks, key, 'outsider');
    const session = await startAcquisition(
      client,
      // Without fairness the waiter holds no place in the queue, so it cannot be woken: it backs off.
      {
        key,
        requester: 'replica-b',
        fairness: 'no-starvation-guarantee',
        budget: { baseBackoffMs: 50, maxBackoffMs: 200 },
      },
      { taskQueue },
    );
    await waitFor(
      'two back-offs',
      async () => timerSummaries(await historyOf(client, session.workflowId)).length >= 2,
    );
    // Released outside lockwarden: no wake-up signal, the next timer finds the key free.
    await locks.release(outside);
    await waitFor('holding', phaseIs(client, session.workflowId, 'holding'));
    const holding = await stateOf(client, session.workflowId);
    await releaseHeld(client, session.workflowId);
    await session.result();
    return {
      histories: { 'session-retry-then-acquire': session.workflowId },
      holding,
      timerSummaries: timerSummaries(await historyOf(client, session.workflowId)),
    };
  },
} satisfies Scenario;

/**
 * A holder and a waiter parked behind it; the holder's release wakes the waiter, which takes the
 * lease and releases.
 */
async function handOffToParkedWaiter(
  { client, taskQueue, tag }: ScenarioContext,
  holderName: string,
  waiterName: string,
) {
  const key = `wake-${tag}`;
  const holder = await acquire(client, { key, requester: 'holder' }, { taskQueue });
  const waiter = await startAcquisition(
    client,
    { key, requester: 'waiter', budget: { baseBackoffMs: 8_000, maxBackoffMs: 8_000 } },
    { taskQueue },
  );
  await waitFor('the waiter parked', phaseIs(client, waiter.workflowId, 'queued'));
  const releasedAt = Date.now();
  await release(client, holder.lease);
  await waitFor('the waiter holding', phaseIs(client, waiter.workflowId, 'holding'));
  const handoffMs = Date.now() - releasedAt;
  await releaseHeld(client, waiter.workflowId);
  await waiter.result();
  const history = await historyOf(client, waiter.workflowId);
  return {
    histories: { [holderName]: holder.session.workflowId, [waiterName]: waiter.workflowId },
    handoffMs,
    timerCanceled: (history.events ?? []).some((e) => e.timerCanceledEventAttributes),
    timerSummaries: timerSummaries(history),
    activitySummaries: activitySummaries(history),
    patches: patchIds(history),
  };
}

export const wakeOnRelease = {
  name: 'session-wake-on-release',
  histories: ['session-wake-on-release-holder', 'session-wake-on-release-waiter'],
  run: (ctx: ScenarioContext) =>
    handOffToParkedWaiter(ctx, 'session-wake-on-release-holder', 'session-wake-on-release-waiter'),
} satisfies Scenario;

export const escalateOperatorRetry = {
  name: 'session-escalate-operator-retry',
  histories: ['session-escalate-operator-retry'],
  async run({ client, taskQueue, locks, escalations, tag }: ScenarioContext) {
    const key = `operator-${tag}`;
    const stuck = await holdOutside(locks, key, 'stuck-job');
    const session = await startAcquisition(
      client,
      { key, requester: 'replica-b', budget: { maxRetries: 0 } },
      { taskQueue },
    );
    const handle = client.workflow.getHandle(session.workflowId);
    await waitFor('escalated', phaseIs(client, session.workflowId, 'escalated'));
    const escalated = await stateOf(client, session.workflowId);
    const recorded = await escalations.recentForKey(key, new Date(0));
    // A malformed answer from the UI's Send Signal is ignored and counted; the session still waits.
    await handle.signal(resolveEscalationSignal, { action: 'retry', operator: '', reason: 'typo' });
    await locks.release(stuck);
    const applied = await resolve(client, session.workflowId, {
      action: 'retry',
      extraRetries: 3,
      operator: 'alice',
      reason: 'stuck job killed',
    });
    await waitFor('holding', phaseIs(client, session.workflowId, 'holding'));
    const holding = await stateOf(client, session.workflowId);
    // An answer the holding session cannot take is refused, and the caller is told why.
    const refusal = await resolve(client, session.workflowId, {
      action: 'abandon',
      operator: 'bob',
      reason: 'late',
    }).then(
      () => null,
      (error: Error & { cause?: Error }) => error.cause?.message ?? error.message,
    );
    await releaseHeld(client, session.workflowId);
    return {
      histories: { 'session-escalate-operator-retry': session.workflowId },
      escalated,
      recorded,
      applied,
      holding,
      refusal,
      outcome: await session.result(),
    };
  },
} satisfies Scenario;

export const escalationResolvedByRelease = {
  name: 'session-escalation-resolved-by-release',
  histories: ['session-escalation-resolved-by-release'],
  async run({ client, taskQueue, escalations, tag }: ScenarioContext) {
    const key = `resolved-${tag}`;
    const holder = await acquire(client, { key, requester: 'holder' }, { taskQueue });
    const waiter = await startAcquisition(
      client,
      { key, requester: 'replica-b', budget: { maxRetries: 0 }, escalationTimeoutMs: 120_000 },
      { taskQueue },
    );
    await waitFor('escalated', phaseIs(client, waiter.workflowId, 'escalated'));
    const escalated = await stateOf(client, waiter.workflowId);
    // No operator answers: the holder's release wakes the escalated waiter, which still has its place.
    await release(client, holder.lease);
    await waitFor('holding', phaseIs(client, waiter.workflowId, 'holding'));
    const holding = await stateOf(client, waiter.workflowId);
    const lateAnswer = await resolve(client, waiter.workflowId, {
      action: 'abandon',
      operator: 'bob',
      reason: 'too late',
    }).then(
      () => null,
      (error: Error & { cause?: Error }) => error.cause?.message ?? error.message,
    );
    await releaseHeld(client, waiter.workflowId);
    return {
      histories: { 'session-escalation-resolved-by-release': waiter.workflowId },
      escalated,
      holding,
      lateAnswer,
      escalationsCounted: await escalations.recentForKey(key, new Date(0)),
      activitySummaries: activitySummaries(await historyOf(client, waiter.workflowId)),
      outcome: await waiter.result(),
    };
  },
} satisfies Scenario;

export const escalateTimeoutAbandon = {
  name: 'session-escalate-timeout-abandon',
  histories: ['session-escalate-timeout-abandon'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `timeout-${tag}`;
    await holdOutside(locks, key, 'stuck-job');
    const session = await startAcquisition(
      client,
      { key, requester: 'challenger', budget: { maxRetries: 0 }, escalationTimeoutMs: 1_000 },
      { taskQueue },
    );
    const outcome = await session.result();
    return {
      histories: { 'session-escalate-timeout-abandon': session.workflowId },
      key,
      outcome,
      waitersAfter: (await locks.inspect(key)).waiters,
    };
  },
} satisfies Scenario;

/** How long the slow model of {@link wokenDuringDecision} takes to answer. */
export const SLOW_MODEL_MS = 2_000;

export const wokenDuringDecision = {
  name: 'session-woken-during-decision',
  histories: ['session-woken-during-decision'],
  model: [{ kind: 'slow', delayMs: SLOW_MODEL_MS, then: modelDecision({ retry_after_ms: 100 }) }],
  async run({ client, taskQueue, model, tag }: ScenarioContext) {
    const key = `slow-model-${tag}`;
    const holder = await acquire(client, { key, requester: 'holder' }, { taskQueue });
    const waiter = await startAcquisition(client, { key, requester: 'waiter' }, { taskQueue });
    await waitFor('the decision under way', async () => (model?.requests.length ?? 0) > 0);
    // The model answers no earlier than this, on the clock the SQLite lock service reads too.
    const modelAnswersAt = Date.now() + SLOW_MODEL_MS - 500;
    const released = await release(client, holder.lease);
    const next = await awaitLeaseOf(client, waiter.workflowId);
    const state = await stateOf(client, waiter.workflowId);
    await releaseHeld(client, waiter.workflowId);
    const history = await historyOf(client, waiter.workflowId);
    return {
      histories: { 'session-woken-during-decision': waiter.workflowId },
      releasedAt: released.ok ? released.serviceTime : null,
      modelAnswersAt,
      next,
      decisions: state.decisions,
      decisionCancelRequests: cancelRequestsOf(history, 'decideRetry'),
      timerSummaries: timerSummaries(history),
      activitySummaries: activitySummaries(history),
    };
  },
} satisfies Scenario;

export const modelClampedThenEscalate = {
  name: 'session-model-clamped-then-escalate',
  histories: ['session-model-clamped-then-escalate'],
  model: [
    modelDecision({ retry_after_ms: 3_600_000 }),
    modelDecision({
      decision: 'escalate',
      retry_after_ms: null,
      backoff_strategy: null,
      escalation_reason: 'holder stuck for too long',
    }),
  ],
  async run({ client, taskQueue, locks, model, tag }: ScenarioContext) {
    const key = `export-${tag}`;
    await holdOutside(locks, key, 'replica-a');
    const session = await startAcquisition(
      client,
      {
        key,
        requester: 'replica-b',
        fairness: 'no-starvation-guarantee', // backs off (no place to park), so the clamp shows
        budget: { maxBackoffMs: 250, baseBackoffMs: 50 },
        escalationTimeoutMs: 1_000,
      },
      { taskQueue },
    );
    const outcome = await session.result();
    const history = await historyOf(client, session.workflowId);
    return {
      histories: { 'session-model-clamped-then-escalate': session.workflowId },
      outcome,
      timerSummaries: timerSummaries(history),
      activitySummaries: activitySummaries(history),
      modelRequests: model?.requests.length ?? 0,
      holderAfter: (await locks.inspect(key)).holder,
    };
  },
} satisfies Scenario;

/** The model abandons within the budget: the caller's acquire() fails with the model's own reasoning. */
export const modelAbandons = {
  name: 'session-model-abandons',
  histories: ['session-model-abandons'],
  model: [
    modelDecision({
      decision: 'abandon',
      retry_after_ms: null,
      backoff_strategy: null,
      starvation_risk: 'high',
      explanation: 'The holder runs a nightly job that will not finish within this wait budget.',
    }),
  ],
  async run({ client, taskQueue, locks, model, tag }: ScenarioContext) {
    const key = `abandoned-${tag}`;
    await holdOutside(locks, key, 'replica-a');
    const request = { key, requester: 'replica-b', fairness: 'no-starvation-guarantee' as const };
    const failure = await acquire(client, request, { taskQueue }).then(
      () => null,
      (error: unknown) => error,
    );
    const workflowId = acquisitionWorkflowId(key, 'replica-b');
    return {
      histories: { 'session-model-abandons': workflowId },
      failure,
      outcome: await client.workflow.getHandle(workflowId).result(),
      modelRequests: model?.requests.length ?? 0,
      queueAfter: (await locks.inspect(key)).waiters,
    };
  },
} satisfies Scenario;

/**
 * The model flags a deadlock the lock service's graph does not show: the session checks the graph at
 * once and, finding no cycle, escalates (its place kept) with a reason naming the suspicion; the
 * operator abandons it.
 */
export const modelFlagsDeadlock = {
  name: 'session-model-flags-deadlock',
  histories: ['session-model-flags-deadlock'],
  model: [
    modelDecision({
      deadlock_detected: true,
      explanation: 'replica-a may be waiting on replica-b in turn.',
    }),
  ],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `flagged-${tag}`;
    await holdOutside(locks, key, 'replica-a');
    const session = await startAcquisition(client, { key, requester: 'replica-b' }, { taskQueue });
    await waitFor('escalated', async () => (await stateOf(client, session.workflowId)).phase === 'escalated');
    const escalated = await stateOf(client, session.workflowId);
    const queueWhileEscalated = (await locks.inspect(key)).waiters;
    await resolve(client, session.workflowId, { action: 'abandon', operator: 'ops', reason: 'no cycle' });
    return {
      histories: { 'session-model-flags-deadlock': session.workflowId },
      escalated,
      queueWhileEscalated,
      outcome: await session.result(),
    };
  },
} satisfies Scenario;

/**
 * Two waits, one model configuration: a wait whose owner's wait-for edges span two keys (it holds one
 * key that another waits for, and waits for a second) asks the larger model with the edges in the
 * prompt; a wait on one key, with no owner, asks the small one with none.
 */
export const modelByWaitSpan = {
  name: 'session-model-by-wait-span',
  histories: ['session-model-by-wait-span-multi', 'session-model-by-wait-span-single'],
  model: [modelDecision({}), modelDecision({})],
  async run({ client, taskQueue, locks, model, tag }: ScenarioContext) {
    const [held, wanted, lone] = [`held-${tag}`, `wanted-${tag}`, `lone-${tag}`];
    // Edges join owners (threads of control): the job holds `held` (through its first step), which
    // another job waits for, and its second step waits for `wanted`, which a third job holds.
    const grant = async (key: string, requester: string, owner: string) => {
      const held = await locks.tryAcquire({ key, requester, owner, ttlMs: 60_000 });
      if (!held.granted) throw new Error(`scenario setup: ${key} is already held`);
      return held.lease;
    };
    await grant(held, 'job-step-1', 'job');
    await locks.tryAcquire({
      key: held,
      requester: 'other-step',
      owner: 'other-job',
      ttlMs: 60_000,
      queueTicketMs: 60_000,
    });
    const wantedLease = await grant(wanted, 'third-step', 'third-job');
    const loneLease = await holdOutside(locks, lone, 'outsider');
    const multi = await startAcquisition(
      client,
      { key: wanted, requester: 'job-step-2', owner: 'job' },
      { taskQueue },
    );
    const single = await startAcquisition(client, { key: lone, requester: 'solo' }, { taskQueue });
    await waitFor('both asked the model', async () => (model?.requests.length ?? 0) >= 2);
    // Let both have their keys, and give them back through their sessions.
    await locks.release(wantedLease);
    await locks.release(loneLease);
    for (const session of [multi, single]) {
      await waitFor('holding', phaseIs(client, session.workflowId, 'holding'));
      await releaseHeld(client, session.workflowId);
      await session.result();
    }
    const askedFor = (requester: string) =>
      model?.requests.find((r) =>
        JSON.stringify(r.body.messages).includes(`requested by: \\"${requester}\\"`),
      );
    return {
      histories: {
        'session-model-by-wait-span-multi': multi.workflowId,
        'session-model-by-wait-span-single': single.workflowId,
      },
      multi: askedFor('job-step-2'),
      single: askedFor('solo'),
    };
  },
} satisfies Scenario;

export const modelOverruledByBudget = {
  name: 'session-model-overruled-by-budget',
  histories: ['session-model-overruled-by-budget'],
  model: [modelDecision({ retry_after_ms: 60, backoff_strategy: 'linear', explanation: 'Try again.' })],
  async run({ client, taskQueue, locks, model, tag }: ScenarioContext) {
    const key = `overruled-${tag}`;
    await holdOutside(locks, key, 'stuck-job');
    const session = await startAcquisition(
      client,
      {
        key,
        requester: 'replica-b',
        fairness: 'no-starvation-guarantee', // asks the model at every denial
        budget: { maxRetries: 2 },
        escalationTimeoutMs: 1_000,
      },
      { taskQueue },
    );
    return {
      histories: { 'session-model-overruled-by-budget': session.workflowId },
      outcome: await session.result(),
      modelRequests: model?.requests.length ?? 0,
    };
  },
} satisfies Scenario;

/**
 * Seed 000's harness rules in one session: "Must not exceed 2 retries" tightens the default budget
 * of 20; the model's delays are jittered; its abandon on the spent budget is escalated instead.
 */
export const constraintsEnforced = {
  name: 'session-constraints-enforced',
  histories: ['session-constraints-enforced'],
  model: [
    modelDecision({ retry_after_ms: 300 }),
    modelDecision({ retry_after_ms: 300 }),
    modelDecision({
      decision: 'abandon',
      retry_after_ms: null,
      backoff_strategy: null,
      explanation: 'Give up.',
    }),
  ],
  async run({ client, taskQueue, locks, model, tag }: ScenarioContext) {
    const key = `constrained-${tag}`;
    await holdOutside(locks, key, 'stuck-job');
    const session = await startAcquisition(
      client,
      {
        key,
        requester: 'replica-b',
        fairness: 'no-starvation-guarantee', // asks the model at every denial
        constraints: ['Must not exceed 2 retries'],
        escalationTimeoutMs: 1_000,
      },
      { taskQueue },
    );
    await waitFor('escalated', phaseIs(client, session.workflowId, 'escalated'));
    const escalated = await stateOf(client, session.workflowId);
    return {
      histories: { 'session-constraints-enforced': session.workflowId },
      escalated,
      outcome: await session.result(),
      modelRequests: model?.requests.length ?? 0,
    };
  },
} satisfies Scenario;

export const deadlock = {
  name: 'session-deadlock',
  histories: ['session-deadlock-by-owner-escalator', 'session-deadlock-by-owner-halted'],
  async run({ client, taskQueue, escalations, tag }: ScenarioContext) {
    const [a, b] = [`deadlock-a-${tag}`, `deadlock-b-${tag}`];
    // Two jobs, each holding one key while it asks for the other's: the owner each declares is what
    // joins its hold and its wait (the requester names alone would join nothing).
    const [alpha, beta] = [{ owner: 'alpha' }, { owner: 'beta' }];
    const holdA = await acquire(client, { key: a, requester: 'replica-1', ...alpha }, { taskQueue });
    const holdB = await acquire(client, { key: b, requester: 'replica-2', ...beta }, { taskQueue });
    const budget = { baseBackoffMs: 50, maxBackoffMs: 200 };
    const alphaWaits = await startAcquisition(
      client,
      { key: b, requester: 'replica-1', budget, ...alpha },
      { taskQueue },
    );
    const betaWaits = await startAcquisition(
      client,
      { key: a, requester: 'replica-2', budget, ...beta },
      { taskQueue },
    );
    const betaOutcome = await betaWaits.result();
    await waitFor('alpha escalated', phaseIs(client, alphaWaits.workflowId, 'escalated'));
    const alphaEscalated = await stateOf(client, alphaWaits.workflowId);
    const escalationsRecorded =
      (await escalations.recentForKey(a, new Date(0))) + (await escalations.recentForKey(b, new Date(0)));
    await resolve(client, alphaWaits.workflowId, {
      action: 'abandon',
      operator: 'bob',
      reason: 'breaking the cycle',
    });
    const alphaOutcome = await alphaWaits.result();
    await release(client, holdA.lease);
    await release(client, holdB.lease);
    return {
      histories: {
        'session-deadlock-by-owner-escalator': alphaWaits.workflowId,
        'session-deadlock-by-owner-halted': betaWaits.workflowId,
      },
      keys: [a, b],
      betaOutcome,
      alphaEscalated,
      escalationsRecorded,
      alphaOutcome,
    };
  },
} satisfies Scenario;

export const leaseLost = {
  name: 'session-lease-lost',
  histories: ['session-lease-lost'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `lost-${tag}`;
    const { lease, session } = await acquire(
      client,
      { key, requester: 'replica-a', ttlMs: 1_500 },
      { taskQueue },
    );
    // Another party takes the key under the session's feet (as after a pause past the TTL).
    const releasedOutside = await locks.release(lease);
    const intruder = await holdOutside(locks, key, 'replica-b');
    const outcome = await session.result();
    return {
      histories: { 'session-lease-lost': session.workflowId },
      lease,
      releasedOutside,
      intruder,
      outcome,
      serviceAfter: await locks.inspect(key),
      activitySummaries: activitySummaries(await historyOf(client, session.workflowId)),
    };
  },
} satisfies Scenario;

export const holdEndsByItself = {
  name: 'session-hold-ends',
  histories: ['session-hold-limit', 'session-holder-gone'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    // One session reaches its hold limit; another's holder never sends a keep-alive (as if it died
    // the moment it was granted).
    const limited = await startAcquisition(
      client,
      { key: `limit-${tag}`, requester: 'long-job', maxHoldMs: 1_500 },
      { taskQueue },
    );
    const silent = await startAcquisition(
      client,
      { key: `silent-${tag}`, requester: 'crashed-service', holderTtlMs: 3_000 },
      { taskQueue },
    );
    const [limitOutcome, goneOutcome] = await Promise.all([limited.result(), silent.result()]);
    return {
      histories: { 'session-hold-limit': limited.workflowId, 'session-holder-gone': silent.workflowId },
      limitOutcome,
      goneOutcome,
      keysAfter: [await locks.inspect(`limit-${tag}`), await locks.inspect(`silent-${tag}`)],
    };
  },
} satisfies Scenario;

export const withLockHoldLockFor = {
  name: 'withLock-holdLockFor',
  histories: ['withLock-holdLockFor-parent', 'withLock-holdLockFor-session'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `job-${tag}`;
    const workflowId = `job/${tag}`;
    const sessionId = acquisitionWorkflowId(key, 'nightly-job');
    const lease = await client.workflow.execute<(r: object, ms: number) => Promise<Lease>>('holdLockFor', {
      taskQueue,
      workflowId,
      args: [{ key, requester: 'nightly-job' }, 300],
    });
    return {
      histories: { 'withLock-holdLockFor-parent': workflowId, 'withLock-holdLockFor-session': sessionId },
      key,
      lease,
      holderAfter: (await locks.inspect(key)).holder,
      sessionOutcome: await client.workflow.getHandle(sessionId).result(),
    };
  },
} satisfies Scenario;

/**
 * A withLock job whose lease is lost while its function runs (another holder took the key at the
 * service): the session ends lease-lost, withLock cancels the job's hold timer and throws LeaseLost.
 */
export const withLockStoppedOnLoss = {
  name: 'withLock-stopped-on-loss',
  histories: ['withLock-stopped-on-loss-parent'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `stopped-${tag}`;
    const requester = 'nightly-job';
    const workflowId = `stopped-job/${tag}`;
    // A job that would hold for a minute, on a 3 s lease.
    const job = client.workflow.execute('holdLockFor', {
      taskQueue,
      workflowId,
      args: [{ key, requester, ttlMs: 3_000 }, 60_000],
    });
    job.catch(() => undefined);
    const sessionId = acquisitionWorkflowId(key, requester);
    await waitFor('the session holding', phaseIs(client, sessionId, 'holding'));
    // The job under way: withLock proved the lease and started the hold. A loss before that would
    // end the job before it ran, which is another test's case (a race this one lost in CI).
    await waitFor(
      'the job holding',
      async () => timerSummaries(await historyOf(client, workflowId)).length === 1,
    );
    // Another holder takes the key at the lock service: the session's next renewal finds its token.
    const lease = (await stateOf(client, sessionId)).lease!;
    await locks.release(lease);
    const intruder = await locks.tryAcquire({ key, requester: 'intruder', ttlMs: 30_000 });
    const startedAt = Date.now();
    const failure = await job.then(
      () => null,
      (error: { cause?: unknown }) => error.cause,
    );
    return {
      histories: { 'withLock-stopped-on-loss-parent': workflowId },
      intruder,
      failure,
      failedAfterMs: Date.now() - startedAt,
      sessionOutcome: await client.workflow.getHandle(sessionId).result(),
      timerSummaries: timerSummaries(await historyOf(client, workflowId)),
    };
  },
} satisfies Scenario;

export const releaseLockFenced = {
  name: 'releaseLock-fenced',
  histories: ['releaseLock-fenced'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `release-${tag}`;
    // A token the service really issued to this holder, then superseded by the holder's next lease.
    const earlier = await holdOutside(locks, key, 'owner');
    await locks.release(earlier);
    const held = await holdOutside(locks, key, 'owner');
    const stale = await forceRelease(client, earlier, { reason: 'the holder is gone' }, { taskQueue });
    const holderAfterStale = (await locks.inspect(key)).holder;
    const current = await forceRelease(client, held, { reason: 'the holder is gone' }, { taskQueue });
    return {
      histories: { 'releaseLock-fenced': releaseWorkflowId(key, 'owner', held.token) },
      tokens: { stale: earlier.token, held: held.token },
      stale,
      holderAfterStale,
      current,
      holderAfter: (await locks.inspect(key)).holder,
    };
  },
} satisfies Scenario;

export const postmortemTemplate = {
  name: 'postmortem-briefing-template',
  histories: ['postmortem-briefing-template'],
  async run({ client, taskQueue, tag }: ScenarioContext) {
    const facts = {
      firm: 'Northwind Advisory',
      stakeholder: 'Dana Lee',
      job: 'billing nightly export',
      timeline: buildTimeline(`billing/nightly-export-${tag}`, PAUSED_PAST_LEASE),
      evidence: NO_EVIDENCE,
      gates: GATES,
    };
    const workflowId = `postmortem/${tag}`;
    const result = await client.workflow.execute<(f: typeof facts) => Promise<BriefingResult>>(
      'postmortemBriefing',
      {
        taskQueue,
        workflowId,
        args: [facts],
      },
    );
    return { histories: { 'postmortem-briefing-template': workflowId }, result };
  },
} satisfies Scenario;

export const lockStatusOfQueue = {
  name: 'lockStatus-held-and-queued',
  histories: ['lockStatus-held-and-queued'],
  async run({ client, taskQueue, locks, tag }: ScenarioContext) {
    const key = `status-${tag}`;
    const held = await holdOutside(locks, key, 'owner');
    await locks.tryAcquire({ key, requester: 'waiter', ttlMs: 60_000 });
    const workflowId = `status/${key}/${tag}`;
    const status = await client.workflow.execute<typeof lockStatus>('lockStatus', {
      taskQueue,
      workflowId,
      args: [key],
    });
    return { histories: { 'lockStatus-held-and-queued': workflowId }, held, status };
  },
} satisfies Scenario;

export const SCENARIOS: Scenario[] = [
  fastPathHoldRelease,
  heldByKeeper,
  retryThenAcquire,
  wakeOnRelease,
  escalateOperatorRetry,
  escalateTimeoutAbandon,
  escalationResolvedByRelease,
  wokenDuringDecision,
  modelClampedThenEscalate,
  modelAbandons,
  modelFlagsDeadlock,
  modelByWaitSpan,
  modelOverruledByBudget,
  constraintsEnforced,
  deadlock,
  leaseLost,
  holdEndsByItself,
  withLockHoldLockFor,
  withLockStoppedOnLoss,
  releaseLockFenced,
  lockStatusOfQueue,
  postmortemTemplate,
];
