import type { Logger } from 'pino';
import type { LockService } from '../locks/lockService';
import { asNonRetryableOnBadInput } from './nonRetryable';
import type {
  AcquireAttempt,
  FencedActionResult,
  FencedTarget,
  Lease,
  TryAcquireRequest,
  WaiterRef,
} from '../policy/lockSchemas';

/** What the lock activities need: the lock service they talk to and a structured logger. */
export interface LockActivityDeps {
  locks: LockService;
  log: Logger;
}

/**
 * The activities that talk to the lock service. They are the only path by which a lease is granted,
 * renewed or released, and they never see model text.
 */
export function createLockActivities({ locks, log }: LockActivityDeps) {
  return {
    /** One fast-path attempt at the lock service. */
    async tryAcquireLock(request: TryAcquireRequest): Promise<AcquireAttempt> {
      const attempt = await asNonRetryableOnBadInput(() => locks.tryAcquire(request));
      log.info(
        {
          event: 'lock.try-acquire',
          backend: locks.backend,
          key: request.key,
          requester: request.requester,
          granted: attempt.granted,
          code: attempt.granted ? undefined : attempt.denial.code,
        },
        attempt.granted ? 'lease granted' : 'lease denied',
      );
      return attempt;
    },

    /** Gives up the session's place in the key's queue, so a session that stops waiting blocks no one. */
    async leaveQueue(waiter: WaiterRef): Promise<void> {
      await asNonRetryableOnBadInput(() => locks.leave(waiter));
      log.info(
        { event: 'lock.leave-queue', backend: locks.backend, key: waiter.key, requester: waiter.requester },
        'left the queue',
      );
    },

    /** Owner-only, fenced release of a lease the service issued. */
    async releaseLock(lease: Pick<Lease, 'key' | 'holder' | 'token'>): Promise<FencedActionResult> {
      const target: FencedTarget = { key: lease.key, holder: lease.holder, token: lease.token };
      const result = await asNonRetryableOnBadInput(() => locks.release(target));
      log.info(
        {
          event: 'lock.release',
          backend: locks.backend,
          key: lease.key,
          holder: lease.holder,
          ok: result.ok,
          reason: result.ok ? undefined : result.reason,
        },
        result.ok ? 'lease released' : 'release refused',
      );
      return result;
    },
  };
}

/** The lock activities' type, for `proxyActivities` in workflows. */
export type LockActivities = ReturnType<typeof createLockActivities>;
