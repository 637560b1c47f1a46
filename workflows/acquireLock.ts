import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  setCurrentDetails,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  type AcquireOutcome,
  type AcquireRequest,
  type AcquireRequestInput,
  parseAcquireRequest,
} from '../policy/acquireRequest';
import { decorrelatedJitter } from '../policy/backoff';
import { type LockState, SEARCH_ATTRIBUTES } from '../policy/constants';
import { buildDecisionContext, type PastDecision } from '../policy/decisionContext';
import { decideByPolicy, type PolicyTuning } from '../policy/decisionPolicy';
import { isInvalidLockRequest, NON_RETRYABLE_ERROR_TYPES } from '../policy/errors';
import { boundRetryDelay, guardDecision, type RetryProgress } from '../policy/guardrails';
import type { DecisionRecord } from '../policy/retryDecision';
import { untrustedText } from '../policy/untrustedText';

// The fast path must answer quickly; a lock service that is down is retried by Temporal, briefly.
const { tryAcquireLock, leaveQueue } = proxyActivities<Activities>({
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

/** How long the lock service keeps a waiter's place (the contract's default ticket). */
const QUEUE_TICKET_MS = 30_000;

/**
 * One acquisition session: fast path, then on each denial a retry decision (model or deterministic
 * policy), bounded by guardrails no decision can override, and a durable sleep; it ends acquired,
 * escalated or abandoned. Returns the lease the lock service issued.
 */
export async function acquireLock(input: AcquireRequestInput): Promise<AcquireOutcome> {
  const request = validated(input);
  const { key, requester, ttlMs, fairness, priority, budget } = request;
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.lockKey, value: key },
    { key: SEARCH_ATTRIBUTES.lockRequester, value: requester },
  ]);
  showState('acquiring', `acquiring ${key} for ${requester}`);

  // Date.now() inside a workflow is the SDK's deterministic workflow clock, replayed from history.
  const startedAt = Date.now();
  let previousBackoffMs = budget.baseBackoffMs;
  const recentDecisions: PastDecision[] = [];
  for (let attempts = 1; ; attempts++) {
    const attempt = await tryAcquireLock.executeWithOptions({ summary: `fast path, attempt ${attempts}` }, [
      { key, requester, ttlMs, fairness, priority },
    ]);
    const waitedMs = Date.now() - startedAt;
    if (attempt.granted) {
      showState('acquired', `holding ${key} with token ${attempt.lease.token} after ${attempts} attempt(s)`);
      return { status: 'acquired', lease: attempt.lease, attempts, waitedMs };
    }
    const lastDenial = attempt.denial;
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

    const tuning: PolicyTuning = {
      baseBackoffMs: budget.baseBackoffMs,
      maxBackoffMs: budget.maxBackoffMs,
      previousBackoffMs,
      queueTicketMs: QUEUE_TICKET_MS,
    };
    const context = buildDecisionContext({
      request,
      denial: lastDenial,
      attempts,
      elapsedMs: waitedMs,
      recentDecisions,
      waitForEdges: [],
    });
    const record = await decide(context, tuning, progress, request);
    recentDecisions.push({
      decision: record.decision.decision,
      retryAfterMs: record.decision.retry_after_ms ?? null,
      failureReason: lastDenial.reason,
    });
    const step = guardDecision(record.decision, progress, budget, null);
    if (step.kind === 'escalate') {
      await giveUpPlace(request, 'escalated');
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
    if (step.kind === 'abandon') {
      await giveUpPlace(request, 'abandoned');
      showState('abandoned', `abandoned after ${attempts} attempt(s): ${step.reason}`);
      return { status: 'abandoned', attempts, waitedMs, lastDenial, reason: step.reason };
    }
    previousBackoffMs = step.sleepMs;
    const strategy = record.decision.backoff_strategy ?? 'unspecified';
    const clampNote = step.clamped ? ` (asked ${record.decision.retry_after_ms} ms, clamped)` : '';
    showState('backing-off', `${lastDenial.reason}; retrying in ${step.sleepMs} ms (${record.provider})`);
    await sleep(step.sleepMs, {
      summary:
        `backoff ${step.sleepMs} ms, ${strategy}, attempt ${attempts} of ${budget.maxRetries + 1}${clampNote}: ` +
        untrustedText(record.decision.explanation, 160),
    });
  }
}

// The decision activity, or the workflow's own policy when the activity has failed for good.
async function decide(
  context: ReturnType<typeof buildDecisionContext>,
  tuning: PolicyTuning,
  progress: RetryProgress,
  request: AcquireRequest,
): Promise<DecisionRecord> {
  const jitterSample = Math.random(); // the workflow's seeded, replay-safe generator
  try {
    return await decideRetry.executeWithOptions({ summary: `retry decision, attempt ${context.attempt}` }, [
      { context, tuning, jitterSample, progress, budget: request.budget, harnessDeadlock: null },
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

function showState(state: LockState, details: string): void {
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockState, value: state }]);
  setCurrentDetails(details);
}
