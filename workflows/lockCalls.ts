import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../policy/errors';

/**
 * The lock-service calls, with one retry policy wherever they are made (sessions and the fenced
 * release workflow): they must answer quickly; a lock service that is down is retried by Temporal,
 * briefly; bad input and a lease action the deny gate refuses are never retried.
 */
export const lockCalls = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
  },
});
