import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { acquisitionWorkflowId } from '../policy/constants';
import { lockReleased } from '../temporal/messages';

/**
 * Wakes a waiting session from an activity, through the worker's own Temporal client: a release
 * reaches the head of the queue in one hop, with no workflow task of the releasing session between
 * the lock service's answer and the signal.
 */
export interface SessionWaker {
  wake(key: string, requester: string): Promise<void>;
}

/** A waker that signals `lockReleased` to the session of (key, requester); an ended session is logged. */
export function createSessionWaker(client: Client, log: Logger): SessionWaker {
  return {
    async wake(key, requester) {
      try {
        await client.workflow.getHandle(acquisitionWorkflowId(key, requester)).signal(lockReleased);
      } catch (error) {
        // A session that has ended (or never ran) cannot be woken: its ticket expires on its own.
        log.info(
          { event: 'lock.wake-missed', key, requester, error: String(error) },
          'no running session to wake',
        );
      }
    },
  };
}
