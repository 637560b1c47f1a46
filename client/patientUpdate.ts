import { randomUUID } from 'node:crypto';
import { WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';

/**
 * How many times an update the server could not take within its RPC deadline is sent again. Each try
 * waits one RPC deadline (about 10 s on the dev server) for a worker too busy to take the update's
 * workflow task; the session itself ends its wait in any case (its budget, its escalation).
 */
export const UPDATE_RPC_TIMEOUTS_TOLERATED = 30;

/**
 * Sends an update with `send(updateId)`, and sends it again, under the same id, when the server
 * answers that it could not take it within the RPC's deadline (a worker too busy to run the
 * session's workflow task in time, as when a thousand holders release at once). The same id makes a
 * second send the same update: the server applies it once, and answers both with its one outcome.
 */
export async function sendPatiently<T>(
  send: (updateId: string) => Promise<T>,
  tolerated = UPDATE_RPC_TIMEOUTS_TOLERATED,
): Promise<T> {
  const updateId = randomUUID();
  for (let timeouts = 0; ; timeouts++) {
    try {
      return await send(updateId);
    } catch (error) {
      if (!(error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) || timeouts >= tolerated) throw error;
    }
  }
}
