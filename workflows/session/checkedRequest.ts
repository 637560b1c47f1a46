import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { SessionAttempt } from '../../activities/lockActivities';
import type { CheckedRequest } from '../../activities/requestActivities';
import type { AcquireRequest } from '../../policy/acquireRequest';
import { nonRetryableOnBadInput } from '../../temporal/failures';
import { handoffCalls, lockServiceUnreachable } from '../lockCalls';
import { unreachableDenial } from './fastPath';
import type { SessionPaths } from './sessionPaths';

/** The session's checked request, and the answer to its first attempt when the check made it. */
export interface CheckedStart {
  request: CheckedRequest;
  firstAttempt: SessionAttempt | null;
}

/**
 * The session's request, checked and with its defaults filled in, or a non-retryable
 * InvalidLockRequest failure that names each bad field (the session then fails before any lock call).
 * The check runs in a local activity, in the first workflow task (REQUEST_CHECKED_IN_ACTIVITY); runs
 * from before that parse it here. A fresh session's first fast-path attempt is made in the same local
 * activity (LEAN_WORKFLOW_TASKS); a run continued as new tries from its own state.
 */
export async function checkedRequest(input: unknown, paths: SessionPaths): Promise<CheckedStart> {
  if (!paths.requestCheckedInActivity)
    return { request: await nonRetryableOnBadInput(() => loadRequestParser()(input)), firstAttempt: null };
  if (!paths.leanWorkflowTasks || continuesARun(input))
    return { request: await checkOnly(input), firstAttempt: null };
  try {
    const { request, attempt } = await typedFailure(() =>
      handoffCalls.checkRequestAndTryAcquire.executeWithOptions(
        { summary: 'check the request, fast path, attempt 1' },
        [input],
      ),
    );
    return { request, firstAttempt: attempt };
  } catch (error) {
    if (!lockServiceUnreachable(error)) throw error;
    // The request may be fine and the service down: checked alone, the attempt is the service's
    // denial, as a fast path that cannot reach the service answers.
    return { request: await checkOnly(input), firstAttempt: unreachableDenial() };
  }
}

function checkOnly(input: unknown): Promise<CheckedRequest> {
  return typedFailure(() =>
    handoffCalls.checkAcquireRequest.executeWithOptions({ summary: 'check the request' }, [input]),
  );
}

// The session fails with the check's own typed failure, as it did when the workflow parsed.
async function typedFailure<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) throw cause;
    throw error;
  }
}

// A continued run's input carries what it resumes; the check refuses it if that is malformed.
function continuesARun(input: unknown): boolean {
  return typeof input === 'object' && input !== null && (input as { resume?: unknown }).resume !== undefined;
}

// Runs recorded before the patch parsed the request in workflow code; only their replays load zod.
function loadRequestParser(): (input: unknown) => AcquireRequest {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require('../../policy/acquireRequest') as typeof import('../../policy/acquireRequest');
  return loaded.parseAcquireRequest;
}
