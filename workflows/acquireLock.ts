import {
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
import { isInvalidLockRequest, NON_RETRYABLE_ERROR_TYPES } from '../policy/errors';
import { boundRetryDelay } from '../policy/guardrails';
import type { Denial } from '../policy/lockSchemas';

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

/**
 * One acquisition session: fast path, then on denial a bounded, jittered, durable back-off until the
 * lease is granted or the hard budget is spent. Returns the lease the lock service issued.
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
  let lastDenial: Denial | undefined;
  for (let attempts = 1; ; attempts++) {
    const attempt = await tryAcquireLock.executeWithOptions({ summary: `fast path, attempt ${attempts}` }, [
      { key, requester, ttlMs, fairness, priority },
    ]);
    const waitedMs = Date.now() - startedAt;
    if (attempt.granted) {
      showState('acquired', `holding ${key} with token ${attempt.lease.token} after ${attempts} attempt(s)`);
      return { status: 'acquired', lease: attempt.lease, attempts, waitedMs };
    }
    lastDenial = attempt.denial;

    const requestedMs = decorrelatedJitter(
      { previousMs: previousBackoffMs, baseMs: budget.baseBackoffMs, capMs: budget.maxBackoffMs },
      Math.random, // the workflow's seeded, replay-safe generator
    );
    const next = boundRetryDelay(requestedMs, { attempts, elapsedMs: waitedMs }, budget);
    if (next.kind === 'stop') {
      // Sessions started before this change gave up without handing their FIFO place back.
      if (patched('leave-queue-when-giving-up')) {
        await leaveQueue.executeWithOptions({ summary: 'leave the queue: budget spent' }, [
          { key, requester },
        ]);
      }
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
  }
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
