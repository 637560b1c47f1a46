// An update sent again under the same id while the server cannot take it yet.
import { randomUUID } from 'node:crypto';
import {
  isGrpcServiceError,
  ServiceError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';

/**
 * How many times an update the server could not take is sent again. Each try waits one RPC deadline
 * (about 10 s on the dev server) for a worker too busy to take the session's workflow task in time,
 * or a pause (below) when the frontend had too many waiting callers; the session itself ends its
 * wait in any case (its budget, its escalation).
 */
const UPDATE_RPC_TIMEOUTS_TOLERATED = 30;

/** gRPC's status code for a server that refuses work it has no room for. */
const RESOURCE_EXHAUSTED = 8;

/** gRPC's status code for the server's WorkflowNotReady. */
const FAILED_PRECONDITION = 9;

/** The pause before asking again a frontend that had too many waiting callers: 1 to 2 s, at random. */
const BUSY_FRONTEND_PAUSE_MS = 1_000;

/**
 * The frontend refused the update's wait because too many callers already wait on it (each caller
 * awaiting an update holds one poll, `frontend.namespaceCount` of them at most): the SDK's own
 * retries ran out, and the answer is to wait a little and ask again, as for a timeout.
 */
export function isBusyFrontend(error: unknown): boolean {
  const cause = error instanceof ServiceError ? error.cause : error;
  return isGrpcServiceError(cause) && cause.code === RESOURCE_EXHAUSTED;
}

/**
 * The server dropped the update because the workflow task that carried it failed on the server's
 * side: WorkflowNotReady, "Unable to perform workflow execution update due to unexpected workflow
 * task failure". It happens when a history host is lost while an update waits: the update's record
 * lives in that host's memory, the host that takes the shard over refuses the worker's answer to an
 * update it has never heard of ("a transient error which will be resolved automatically by
 * retries"), and the waiting caller is told so. Nothing of the update was recorded; sent again under
 * the same id, it is admitted anew.
 */
export function isUpdateLostWithItsTask(error: unknown): boolean {
  const cause = error instanceof ServiceError ? error.cause : error;
  return (
    isGrpcServiceError(cause) &&
    cause.code === FAILED_PRECONDITION &&
    /unexpected workflow task failure/i.test(cause.details ?? cause.message)
  );
}

/**
 * Sends an update with `send(updateId)`, and sends it again, under the same id, when the server
 * answers that it could not take it within the RPC's deadline (a worker too busy to run the
 * session's workflow task in time, as when a thousand holders release at once), that too many
 * callers already wait on the frontend, or that the update was lost with a workflow task a history
 * host's loss failed (after a pause, as for a busy frontend). The same id makes a second send the
 * same update: the server applies it once, and answers both with its one outcome.
 */
export async function sendPatiently<T>(
  send: (updateId: string) => Promise<T>,
  tolerated = UPDATE_RPC_TIMEOUTS_TOLERATED,
  busyPauseMs = BUSY_FRONTEND_PAUSE_MS,
): Promise<T> {
  const updateId = randomUUID();
  for (let refusals = 0; ; refusals++) {
    try {
      return await send(updateId);
    } catch (error) {
      const timedOut = error instanceof WorkflowUpdateRPCTimeoutOrCancelledError;
      const again = timedOut || isBusyFrontend(error) || isUpdateLostWithItsTask(error);
      if (!again || refusals >= tolerated) throw error;
      if (!timedOut) await new Promise((resolve) => setTimeout(resolve, busyPauseMs * (1 + Math.random())));
    }
  }
}
