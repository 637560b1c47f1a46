import { type ActivityOptions, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../policy/errors';

/**
 * The lock-service calls, with one retry policy wherever they are made (sessions and the fenced
 * release workflow): they must answer quickly; a lock service that is down is retried by Temporal,
 * briefly; bad input and a lease action the deny gate refuses are never retried.
 */
const LOCK_CALL_OPTIONS = {
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
  },
} satisfies ActivityOptions;

export const lockCalls = proxyActivities<Activities>(LOCK_CALL_OPTIONS);

/**
 * The calls on a hand-off's path (the fast path and the release), run as local activities: in the
 * worker that runs the session's workflow task, with no activity task dispatched between the
 * workflow and the lock service. Both are safe to run again if a worker dies before its task
 * completes: `tryAcquire` is idempotent per key and requester, and a release is fenced by its token.
 */
export const handoffCalls = proxyLocalActivities<Activities>(LOCK_CALL_OPTIONS);
