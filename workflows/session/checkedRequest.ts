import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { CheckedRequest } from '../../activities/requestActivities';
import type { AcquireRequest } from '../../policy/acquireRequest';
import { nonRetryableOnBadInput } from '../../temporal/failures';
import { handoffCalls } from '../lockCalls';

/**
 * The session's request, checked and with its defaults filled in, or a non-retryable
 * InvalidLockRequest failure that names each bad field (the session then fails before any lock call).
 * The check runs in a local activity, in the first workflow task (REQUEST_CHECKED_IN_ACTIVITY); runs
 * from before that (`inActivity` false) parse it here.
 */
export async function checkedRequest(input: unknown, inActivity: boolean): Promise<CheckedRequest> {
  if (!inActivity) return nonRetryableOnBadInput(() => loadRequestParser()(input));
  try {
    return await handoffCalls.checkAcquireRequest.executeWithOptions({ summary: 'check the request' }, [
      input,
    ]);
  } catch (error) {
    // The session fails with the check's own typed failure, as it did when the workflow parsed.
    const cause = error instanceof ActivityFailure ? error.cause : error;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) throw cause;
    throw error;
  }
}

// Runs recorded before the patch parsed the request in workflow code; only their replays load zod.
function loadRequestParser(): (input: unknown) => AcquireRequest {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require('../../policy/acquireRequest') as typeof import('../../policy/acquireRequest');
  return loaded.parseAcquireRequest;
}
