import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { acquisitionWorkflowId } from '../policy/constants';
import { lockReleased, type ReleaseNotice } from '../temporal/messages';

/**
 * Wakes a waiting session from an activity, through the worker's own Temporal client: a release
 * reaches the head of the queue in one hop, with no workflow task of the releasing session between
 * the lock service's answer and the signal.
 */
export interface SessionWaker {
  /** Wakes the session of (key, requester); `notice` says when a release freed the key. */
  wake(key: string, requester: string, notice?: ReleaseNotice): Promise<void>;
}

/** A waker that signals `lockReleased` to the session of (key, requester); an ended session is logged. */
export function createSessionWaker(client: Client, log: Logger): SessionWaker {
  return {
    async wake(key, requester, notice) {
      try {
        const session = client.workflow.getHandle(acquisitionWorkflowId(key, requester));
        await (notice ? session.signal(lockReleased, notice) : session.signal(lockReleased));
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
