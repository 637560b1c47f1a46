// Bad input and corrupt lock state as non-retryable typed failures, at every activity's edge.
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES, isCorruptLockState, isInvalidLockRequest } from '../policy/errors';
import { credentialRefusal } from '../policy/lockContract/credentialRefusal';

/**
 * Runs `call`; bad input, a lock record lockwarden did not write, or a refused credential or
 * permission (locks/credentialRefusal.ts), which no retry can fix, becomes
 * a non-retryable failure that keeps its message and type. The one conversion activities and
 * workflows share.
 */
export async function nonRetryableOnBadInput<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isInvalidLockRequest(error) || isCorruptLockState(error))
      throw ApplicationFailure.nonRetryable(error.message, error.name);
    // Not contention and not an outage: no retry helps, and the session escalates it at once.
    const refusal = credentialRefusal(error);
    if (refusal !== null)
      throw ApplicationFailure.nonRetryable(refusal, FAILURE_TYPES.lockServiceCredentialsRefused);
    throw error;
  }
}
