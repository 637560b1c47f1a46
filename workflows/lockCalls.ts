// The lock-service activity proxies workflows call, with one retry policy, and outage handling.
import {
  ActivityFailure,
  type ActivityOptions,
  ApplicationFailure,
  proxyActivities,
  proxyLocalActivities,
  type TemporalFailure,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LOCAL_CALL_SCHEDULE_TO_CLOSE_MS } from '../policy/constants';
import { FAILURE_TYPES, NON_RETRYABLE_ERROR_TYPES } from '../policy/errors';

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
 * The same calls as local activities: the same retries, bounded over all attempts by schedule-to-close
 * and each attempt by lockwarden's activity interceptor (LOCAL_ATTEMPT_TIMEOUT_MS, the start-to-close
 * above). No start-to-close here: the SDK core leaks its timer on every retried attempt, which panics
 * once the worker has shut down and can time a later attempt out early (worker/localAttemptBound.ts).
 */
export const LOCAL_LOCK_CALL_OPTIONS = {
  scheduleToCloseTimeout: LOCAL_CALL_SCHEDULE_TO_CLOSE_MS,
  retry: LOCK_CALL_OPTIONS.retry,
} satisfies ActivityOptions;

/**
 * The calls on a hand-off's path (the fast path and the release) and the renewals, run as local
 * activities: in the worker that runs the session's workflow task, with no activity task dispatched
 * between the workflow and the lock service. Each is safe to run again if a worker dies before its
 * task completes: `tryAcquire` is idempotent per key and requester, and a renewal and a release are
 * fenced by their token.
 */
export const handoffCalls = proxyLocalActivities<Activities>(LOCAL_LOCK_CALL_OPTIONS);

/** Makes a lock call; null when the lock service could not be reached (any other failure is thrown). */
export async function unlessUnreachable<T>(call: () => Promise<T>): Promise<T | null> {
  try {
    return await call();
  } catch (error) {
    if (lockServiceUnreachable(error)) return null;
    throw error;
  }
}

/**
 * Whether a lock call failed because the lock service could not be reached, after Temporal's retries
 * (a restart, a failover, a network cut), rather than for bad input, a refused lease action or a
 * cancellation. A session rides such an outage out: it is not the end of the session. A regular
 * activity's failure arrives wrapped in an ActivityFailure, a local activity's as it is.
 */
export function lockServiceUnreachable(error: unknown): error is TemporalFailure {
  const failure = error instanceof ActivityFailure ? error.cause : error;
  if (failure instanceof ApplicationFailure)
    return !failure.nonRetryable && !NON_RETRYABLE_ERROR_TYPES.includes(failure.type as never);
  return failure instanceof TimeoutFailure;
}

/**
 * The lock service's refusal of the worker's credentials or permissions behind a lock call's
 * failure (redacted by the activity), or null for any other failure.
 */
export function credentialsRefusal(error: unknown): string | null {
  const failure = error instanceof ActivityFailure ? error.cause : error;
  return failure instanceof ApplicationFailure && failure.type === FAILURE_TYPES.lockServiceCredentialsRefused
    ? failure.message
    : null;
}
