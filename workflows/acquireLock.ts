import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  type AcquireRequest,
  type AcquireRequestInput,
  parseAcquireRequest,
  type RetryBudget,
} from '../policy/acquireRequest';
import { decorrelatedJitter } from '../policy/backoff';
import {
  acquisitionWorkflowId,
  LATENCY_FLOOR_MS,
  type LockState,
  SEARCH_ATTRIBUTES,
} from '../policy/constants';
import { buildDecisionContext, type PastDecision } from '../policy/decisionContext';
import { decideByPolicy, type PolicyTuning } from '../policy/decisionPolicy';
import { isInvalidLockRequest, NON_RETRYABLE_ERROR_TYPES } from '../policy/errors';
import { boundRetryDelay, guardDecision, type RetryProgress } from '../policy/guardrails';
import type { Denial, FencedActionResult, Lease } from '../policy/lockSchemas';
import type { DecisionRecord } from '../policy/retryDecision';
import {
  awaitLease,
  deadlockFound,
  type DeadlockNotice,
  type LeaseAnswer,
  lockReleased,
  lockSessionUpdate,
  type OperatorDecision,
  operatorDecisionSchema,
  releaseLease,
  requestRelease,
  resolveEscalation,
  type SessionOutcome,
  type SessionState,
  sessionState,
} from '../policy/sessionMessages';
import { untrustedText } from '../policy/untrustedText';
import { cycleThrough } from '../policy/waitForGraph';

// The fast path, renewal and release must answer quickly; a lock service that is down is retried by
// Temporal, briefly. Bad input is never retried.
const { tryAcquireLock, leaveQueue, renewLease, releaseLock } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
});

// Rate limits and overload are backed off by Temporal, a bounded number of times; after that the
// workflow's own deterministic policy answers.
const { decideRetry } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 4,
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
});

// Paging a human must not be lost: retried for a long while.
const { notifyOnCall } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 20,
  },
});

/** How long the lock service keeps a waiter's place (the contract's default ticket). */
const QUEUE_TICKET_MS = 30_000;
/** A holding session renews at this fraction of the TTL: reviewed here, never taken from a decision. */
const RENEW_FRACTION = 1 / 3;

/**
 * One acquisition session, as callers meet it. Fast path; on each denial a retry decision (model or
 * deterministic policy) bounded by guardrails, and a durable back-off that a release cuts short;
 * escalation to on-call with an operator's answer; then a hold that renews the lease only while the
 * lock service still shows the token it issued, until the caller releases it.
 */
export async function acquireLock(input: AcquireRequestInput): Promise<SessionOutcome> {
  const request = validated(input);
  const { key, requester } = request;
  let budget: RetryBudget = request.budget;
  let woken = false;
  let releaseRequested = false;
  const release: { result?: FencedActionResult } = {};
  let operatorDecision: OperatorDecision | undefined;
  let deadlockNotice: DeadlockNotice | undefined;
  let ended: SessionOutcome | undefined;
  const state: SessionState = {
    phase: 'acquiring',
    key,
    requester,
    attempts: request.resume?.attempts ?? 0,
    decisions: [],
    holder: null,
    lease: request.resume?.lease ?? null,
    budgetLeft: { retries: budget.maxRetries, waitMs: budget.maxTotalWaitMs },
    escalation: null,
  };

  setHandler(sessionState, () => state);
  setHandler(lockReleased, () => {
    if (request.wakeOnRelease) woken = true;
  });
  setHandler(deadlockFound, (notice) => {
    deadlockNotice ??= notice;
    woken = true;
  });
  setHandler(requestRelease, () => {
    releaseRequested = true;
  });
  setHandler(resolveEscalation, (answer) => {
    const parsed = operatorDecisionSchema.safeParse(answer);
    if (parsed.success) operatorDecision = parsed.data;
    else
      log.warn('ignored an invalid operator decision', { issues: parsed.error.issues.map((i) => i.message) });
  });
  setHandler(awaitLease, async (): Promise<LeaseAnswer> => {
    await condition(() => state.phase === 'holding' || ended !== undefined);
    return ended ? { status: 'ended', outcome: ended } : { status: 'acquired', lease: state.lease! };
  });
  setHandler(releaseLease, async () => {
    if (state.phase !== 'holding') return { ok: false as const, reason: 'not-holding' as const };
    releaseRequested = true;
    await condition(() => release.result !== undefined);
    return release.result!;
  });

  const finish = async (outcome: SessionOutcome): Promise<SessionOutcome> => {
    ended = outcome;
    if (request.notifyParent) await tellParent({ status: 'ended', outcome });
    await condition(allHandlersFinished);
    return outcome;
  };

  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.lockKey, value: key },
    { key: SEARCH_ATTRIBUTES.lockRequester, value: requester },
  ]);

  // ---- acquisition ----
  let lease: Lease | null = state.lease;
  const startedAt = Date.now() - (request.resume?.elapsedBeforeMs ?? 0); // the SDK's deterministic clock
  let previousBackoffMs = budget.baseBackoffMs;
  const recentDecisions: PastDecision[] = [];
  showState('acquiring', `acquiring ${key} for ${requester}`);
  let lastDenial: Denial | undefined;
  while (!lease) {
    if (deadlockNotice && lastDenial) {
      const notice = deadlockNotice;
      await giveUpPlace(request, 'deadlock');
      if (notice.escalator !== requester) {
        state.phase = 'halted';
        showState('halted', `halted: deadlock (${notice.cycle}); ${notice.escalator} escalates it`);
        return finish({
          status: 'halted',
          attempts: state.attempts,
          reason: `deadlock: ${notice.cycle}; escalated by ${notice.escalator}`,
        });
      }
      const resolved = await escalateAndWait(`deadlock: ${notice.cycle}`, true, lastDenial);
      if (resolved) return finish(resolved);
      deadlockNotice = undefined;
      continue;
    }
    const attempts = ++state.attempts;
    const attempt = await tryAcquireLock.executeWithOptions({ summary: `fast path, attempt ${attempts}` }, [
      { key, requester, ttlMs: request.ttlMs, fairness: request.fairness, priority: request.priority },
    ]);
    const waitedMs = Date.now() - startedAt;
    if (attempt.granted) {
      lease = attempt.lease;
      if (!patched('hold-lease')) {
        showState('acquired', `holding ${key} with token ${lease.token} after ${attempts} attempt(s)`);
        return { status: 'acquired', lease, attempts, waitedMs };
      }
      break;
    }
    lastDenial = attempt.denial;
    state.holder = lastDenial.holder;
    const progress = { attempts, elapsedMs: waitedMs };

    if (!patched('retry-decision')) {
      // The path of sessions started before decisions were wired in: jitter and hard limits only.
      const requestedMs = decorrelatedJitter(
        { previousMs: previousBackoffMs, baseMs: budget.baseBackoffMs, capMs: budget.maxBackoffMs },
        Math.random,
      );
      const next = boundRetryDelay(requestedMs, progress, budget);
      if (next.kind === 'stop') {
        if (patched('leave-queue-when-giving-up')) await giveUpPlace(request, 'budget spent');
        showState(
          'budget-spent',
          `budget spent (${next.why}) after ${attempts} attempt(s); last: ${lastDenial.reason}`,
        );
        return { status: 'budget-spent', attempts, waitedMs, lastDenial, why: next.why };
      }
      previousBackoffMs = next.sleepMs;
      showState('backing-off', `${lastDenial.reason}; retrying in ${next.sleepMs} ms`);
      await sleep(next.sleepMs, {
        summary: `backoff ${next.sleepMs} ms, decorrelated-jitter, attempt ${attempts} of ${budget.maxRetries + 1}`,
      });
      continue;
    }

    // A free lock this session may not take yet: make sure the head of the queue knows.
    if (
      lastDenial.code === 'QUEUED' &&
      attempt.queueHead &&
      attempt.queueHead !== requester &&
      patched('wake-on-release')
    ) {
      await wakeSession(key, attempt.queueHead);
    }

    // The harness's own deadlock check, from the lock service's holdings and waits. Everyone in the
    // cycle is told, so all of them stop even once the first to leave its queue hides the cycle.
    const cycle = cycleThrough(requester, attempt.waitForEdges ?? []);
    if (cycle && patched('deadlock-detection')) {
      const notice: DeadlockNotice = {
        cycle: cycle.map((e) => `${e.waiter} waits for ${e.key} held by ${e.holder}`).join('; '),
        escalator: [...cycle.map((e) => e.waiter)].sort()[0]!,
      };
      for (const edge of cycle.filter((e) => e.waiter !== requester)) {
        await tellSession(edge.key, edge.waiter, notice);
      }
      deadlockNotice ??= notice;
      continue;
    }

    const tuning: PolicyTuning = {
      baseBackoffMs: budget.baseBackoffMs,
      maxBackoffMs: budget.maxBackoffMs,
      previousBackoffMs,
      queueTicketMs: QUEUE_TICKET_MS,
    };
    const context = buildDecisionContext({
      request: { ...request, budget },
      denial: lastDenial,
      attempts,
      elapsedMs: waitedMs,
      recentDecisions,
      waitForEdges: attempt.waitForEdges ?? [],
    });
    const record = await decide(context, tuning, progress, budget);
    recentDecisions.push({
      decision: record.decision.decision,
      retryAfterMs: record.decision.retry_after_ms ?? null,
      failureReason: lastDenial.reason,
    });
    const step = guardDecision(record.decision, progress, budget, null);
    state.decisions = [
      ...state.decisions.slice(-9),
      {
        attempt: attempts,
        provider: record.provider,
        decision: record.decision.decision,
        retryAfterMs: record.decision.retry_after_ms ?? null,
        appliedMs: step.kind === 'sleep' ? step.sleepMs : null,
        fallbackCause: record.fallbackCause,
      },
    ];
    state.budgetLeft = {
      retries: Math.max(0, budget.maxRetries - (attempts - 1)),
      waitMs: Math.max(0, budget.maxTotalWaitMs - waitedMs),
    };

    if (step.kind === 'escalate') {
      await giveUpPlace(request, 'escalated');
      if (!patched('escalate-to-oncall')) {
        showState('escalated', `escalated after ${attempts} attempt(s): ${step.reason}`);
        return {
          status: 'escalated',
          attempts,
          waitedMs,
          lastDenial,
          reason: step.reason,
          deadlock: step.deadlock,
        };
      }
      const resolved = await escalateAndWait(step.reason, step.deadlock, lastDenial);
      if (resolved) return finish(resolved);
      continue;
    }
    if (step.kind === 'abandon') {
      await giveUpPlace(request, 'abandoned');
      state.phase = 'abandoned';
      showState('abandoned', `abandoned after ${attempts} attempt(s): ${step.reason}`);
      return finish({ status: 'abandoned', attempts, waitedMs, lastDenial, reason: step.reason });
    }

    previousBackoffMs = step.sleepMs;
    const strategy = record.decision.backoff_strategy ?? 'unspecified';
    const clampNote = step.clamped ? ` (asked ${record.decision.retry_after_ms} ms, clamped)` : '';
    state.phase = 'backing-off';
    showState('backing-off', `${lastDenial.reason}; retrying in ${step.sleepMs} ms (${record.provider})`);
    woken = false;
    // A durable timer that a release signal cuts short; `sleep` and this `condition` start the same timer.
    await condition(() => woken, step.sleepMs, {
      summary:
        `backoff ${step.sleepMs} ms, ${strategy}, attempt ${attempts} of ${budget.maxRetries + 1}${clampNote}: ` +
        untrustedText(record.decision.explanation, 160),
    });
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof acquireLock>({
        ...request,
        budget,
        resume: { attempts, elapsedBeforeMs: Date.now() - startedAt, lease: null, heldBeforeMs: 0 },
      });
    }
  }

  // ---- hold ----
  state.lease = lease;
  state.holder = requester;
  state.phase = 'holding';
  showState('holding', `holding ${key} with token ${lease.token}`);
  if (request.notifyParent) await tellParent({ status: 'acquired', lease });
  const heldSince = Date.now() - (request.resume?.heldBeforeMs ?? 0);
  const renewEveryMs = Math.max(LATENCY_FLOOR_MS, Math.floor(request.ttlMs * RENEW_FRACTION));
  // A run continued from another renews first: the hand-over itself took part of the interval.
  let renewFirst = request.resume?.lease != null;
  for (;;) {
    const releaseNow =
      !renewFirst &&
      (await condition(() => releaseRequested, renewEveryMs, {
        summary: `hold token ${lease.token}: renew in ${renewEveryMs} ms`,
      }));
    renewFirst = false;
    if (releaseNow || releaseRequested) break;
    const renewal = await renewLease.executeWithOptions({ summary: `renew token ${lease.token}` }, [lease]);
    if (!renewal.ok) {
      state.phase = 'lease-lost';
      showState('lease-lost', `lease lost: ${renewal.reason}`);
      return finish({ status: 'lease-lost', lease, attempts: state.attempts, reason: renewal.reason });
    }
    lease = { ...lease, leaseUntil: renewal.leaseUntil };
    state.lease = lease;
    if (workflowInfo().continueAsNewSuggested && !releaseRequested) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof acquireLock>({
        ...request,
        budget,
        resume: { attempts: state.attempts, elapsedBeforeMs: 0, lease, heldBeforeMs: Date.now() - heldSince },
      });
    }
  }
  const released = await releaseLock.executeWithOptions({ summary: `release token ${lease.token}` }, [lease]);
  release.result = released.ok
    ? { ok: true, serviceTime: released.serviceTime }
    : { ok: false, reason: released.reason, serviceTime: released.serviceTime };
  if (released.queueHead) await wakeSession(key, released.queueHead);
  state.phase = released.ok ? 'released' : 'lease-lost';
  showState(
    released.ok ? 'released' : 'lease-lost',
    released.ok ? `released token ${lease.token}` : `release refused: ${released.reason}`,
  );
  return finish(
    released.ok
      ? { status: 'released', lease, attempts: state.attempts, heldMs: Date.now() - heldSince }
      : {
          status: 'lease-lost',
          lease,
          attempts: state.attempts,
          reason: `release refused: ${released.reason}`,
        },
  );

  // Notifies on-call and waits for the operator: an ended outcome (abandon, or no answer in time),
  // or undefined when the operator granted more budget and the session should try again.
  async function escalateAndWait(
    reason: string,
    deadlock: boolean,
    lastDenial: Denial,
  ): Promise<SessionOutcome | undefined> {
    const attempts = state.attempts;
    const waitedMs = Date.now() - startedAt;
    state.escalation = { reason, deadlock, flaggedForReview: false, resolution: null };
    const notice = await notifyOnCall.executeWithOptions(
      { summary: `page on-call: ${untrustedText(reason, 120)}` },
      [{ key, requester, workflowId: workflowInfo().workflowId, reason, deadlock, attempts, waitedMs }],
    );
    if (notice.flaggedForReview) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockReview, value: true }]);
    state.escalation.flaggedForReview = notice.flaggedForReview;
    state.phase = 'escalated';
    showState(
      'escalated',
      `waiting for an operator (resolveEscalation) up to ${request.escalationTimeoutMs} ms: ${reason}`,
    );
    operatorDecision = undefined;
    const answered = await condition(() => operatorDecision !== undefined, request.escalationTimeoutMs, {
      summary: `wait for operator, up to ${request.escalationTimeoutMs} ms`,
    });
    // Set by the resolveEscalation handler while we waited (TypeScript cannot see that).
    const answer = operatorDecision as OperatorDecision | undefined;
    state.escalation.resolution = answered && answer ? answer : 'timed-out';
    if (!answered || !answer || answer.action === 'abandon') {
      const why = answer
        ? `abandoned by ${answer.operator}: ${answer.reason}`
        : `no operator answer within ${request.escalationTimeoutMs} ms after: ${reason}`;
      state.phase = 'abandoned';
      showState('abandoned', why);
      return { status: 'abandoned', attempts, waitedMs, lastDenial, reason: why };
    }
    // The operator grants more budget on top of what was spent; the session tries again at once.
    budget = {
      ...budget,
      maxRetries: attempts - 1 + answer.extraRetries,
      maxTotalWaitMs: waitedMs + answer.extraWaitMs,
    };
    state.phase = 'acquiring';
    showState(
      'acquiring',
      `operator ${answer.operator} granted ${answer.extraRetries} more retries: ${answer.reason}`,
    );
    return undefined;
  }
}

// Wakes the session of `requester` on `key`, if it runs; a session that has ended cannot be woken.
async function wakeSession(key: string, requester: string): Promise<void> {
  try {
    await getExternalWorkflowHandle(acquisitionWorkflowId(key, requester)).signal(lockReleased);
  } catch (error) {
    log.info('no running session to wake', { key, requester, error: String(error) });
  }
}

// Tells the waiting session of `requester` on `key` about a deadlock it is part of.
async function tellSession(key: string, requester: string, notice: DeadlockNotice): Promise<void> {
  try {
    await getExternalWorkflowHandle(acquisitionWorkflowId(key, requester)).signal(deadlockFound, notice);
  } catch (error) {
    log.info('no running session to tell of the deadlock', { key, requester, error: String(error) });
  }
}

async function tellParent(answer: LeaseAnswer): Promise<void> {
  const parent = workflowInfo().parent;
  if (parent)
    await getExternalWorkflowHandle(parent.workflowId, parent.runId).signal(
      lockSessionUpdate,
      workflowInfo().workflowId,
      answer,
    );
}

// The decision activity, or the workflow's own policy when the activity has failed for good.
async function decide(
  context: ReturnType<typeof buildDecisionContext>,
  tuning: PolicyTuning,
  progress: RetryProgress,
  budget: RetryBudget,
): Promise<DecisionRecord> {
  const jitterSample = Math.random(); // the workflow's seeded, replay-safe generator
  try {
    return await decideRetry.executeWithOptions({ summary: `retry decision, attempt ${context.attempt}` }, [
      { context, tuning, jitterSample, progress, budget, harnessDeadlock: null },
    ]);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return {
      decision: decideByPolicy(context, tuning, () => jitterSample),
      provider: 'policy',
      model: null,
      repaired: false,
      fallbackCause: 'model-unavailable',
      fallbackDetail: error.cause?.message ?? error.message,
    };
  }
}

async function giveUpPlace(request: AcquireRequest, why: string): Promise<void> {
  await leaveQueue.executeWithOptions({ summary: `leave the queue: ${why}` }, [
    { key: request.key, requester: request.requester },
  ]);
}

function validated(input: unknown): AcquireRequest {
  try {
    return parseAcquireRequest(input);
  } catch (error) {
    if (isInvalidLockRequest(error)) throw ApplicationFailure.nonRetryable(error.message, error.name);
    throw error;
  }
}

function showState(lockState: LockState, details: string): void {
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockState, value: lockState }]);
  setCurrentDetails(details);
}
