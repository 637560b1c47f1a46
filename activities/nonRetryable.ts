import { ApplicationFailure } from '@temporalio/activity';
import { isInvalidLockRequest } from '../policy/errors';

/** Runs `call`; bad input, which no retry can fix, becomes a non-retryable failure that keeps its message. */
export async function asNonRetryableOnBadInput<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isInvalidLockRequest(error)) throw ApplicationFailure.nonRetryable(error.message, error.name);
    throw error;
  }
}
