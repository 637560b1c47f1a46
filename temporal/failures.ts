// Bad input and corrupt lock state as non-retryable typed failures, at every activity's edge.
import { ApplicationFailure } from '@temporalio/common';
import { isCorruptLockState, isInvalidLockRequest } from '../policy/errors';

/**
 * Runs `call`; bad input or a lock record lockwarden did not write, which no retry can fix, becomes
 * a non-retryable failure that keeps its message and type. The one conversion activities and
 * workflows share.
 */
export async function nonRetryableOnBadInput<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isInvalidLockRequest(error) || isCorruptLockState(error))
      throw ApplicationFailure.nonRetryable(error.message, error.name);
    throw error;
  }
}
