// Each local activity attempt bounded here, in the activity, not by the SDK core's start-to-close.
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory, WorkerInterceptors } from '@temporalio/worker';
import { answeredWithin } from '../activities/leaseKeeper';
import { LOCAL_ATTEMPT_TIMEOUT_MS } from '../policy/constants';

/** The failure type of a local activity attempt that ran past its bound: retried like an outage. */
export const LOCAL_ATTEMPT_TIMED_OUT = 'LocalAttemptTimedOut';

/**
 * Why lockwarden's local activities carry a schedule-to-close timeout only, and their attempts are
 * bounded here. The SDK's core (sdk-core, `TimeoutBag::mark_started`, Temporal TypeScript SDK 1.24)
 * starts a start-to-close timer task for every attempt of a local activity and, when the activity is
 * retried in the worker, replaces the handle of the previous attempt's timer without aborting it.
 * Each retried attempt so leaves a timer behind that fires start-to-close after that attempt began:
 * while the activity is still tracked (a later attempt, a local back-off) it times that attempt out
 * early; after the worker has shut down it panics (`receive half not dropped: SendError`), once per
 * leaked timer. A lock service outage is exactly a run of fast-failing, retried local activities.
 * With no start-to-close timeout the core starts no such timer; the attempt's bound is kept here,
 * with the same length and the same outcome (a retryable failure, so the core retries the attempt).
 */
export const boundLocalAttempts: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    execute(input, next) {
      if (!ctx.info.isLocal) return next(input);
      return answeredWithin(LOCAL_ATTEMPT_TIMEOUT_MS, next(input), () =>
        ApplicationFailure.retryable(
          `local activity attempt did not finish within ${LOCAL_ATTEMPT_TIMEOUT_MS} ms`,
          LOCAL_ATTEMPT_TIMED_OUT,
        ),
      );
    },
  },
});

/** The interceptors lockwarden's workers add: the local attempt bound. */
export const lockwardenActivityInterceptors: NonNullable<WorkerInterceptors['activity']> = [
  boundLocalAttempts,
];
