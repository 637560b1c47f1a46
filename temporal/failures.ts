import { ApplicationFailure } from '@temporalio/common';
import { isInvalidLockRequest } from '../policy/errors';

/**
 * Runs `call`; bad input, which no retry can fix, becomes a non-retryable failure that keeps its
 * message and type. The one conversion activities and workflows share.
 */
export async function nonRetryableOnBadInput<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isInvalidLockRequest(error)) throw ApplicationFailure.nonRetryable(error.message, error.name);
    throw error;
  }
}
