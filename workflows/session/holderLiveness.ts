// The hold's watch on a holder outside a workflow: an activity its keep-alives keep open.
import {
  ActivityCancellationType,
  CancellationScope,
  isCancellation,
  proxyActivities,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { holderLivenessActivityId } from '../../policy/decisions/holdLimits';
import type { Lease } from '../../policy/lockContract/lockSchemas';

/** One attempt: a holder gone is gone, there is nothing to retry. */
const { awaitHolderKeepAlives } = proxyActivities<Activities>({
  startToCloseTimeout: '1 day',
  retry: { maximumAttempts: 1 },
});

/** A watch on a holder's keep-alives: why they stopped, once they have; `stop` ends the watch. */
export interface HolderWatch {
  readonly goneReason: string | null;
  stop(): void;
}

/**
 * Watches the holder of `lease` through its keep-alives. The activity (awaitHolderKeepAlives) is
 * started by a worker and left open: its heartbeat timeout is the holder's TTL, and the holder's
 * process heartbeats it by id (client/holderKeepAlive.ts), so Temporal's own timer says when the
 * holder stopped, with no history event and no worker slot while it lives. Its id names the lease's
 * token, so only the holder of this lease keeps it open. Stopped, it is abandoned with no command: the
 * session's end closes it.
 */
export function watchHolder(lease: Lease, holderTtlMs: number, holdLeftMs: number): HolderWatch {
  const scope = new CancellationScope();
  let goneReason: string | null = null;
  const watching = scope.run(() =>
    awaitHolderKeepAlives.executeWithOptions(
      {
        activityId: holderLivenessActivityId(lease.token),
        heartbeatTimeout: holderTtlMs,
        // The hold limit ends the hold first; the bound only keeps the activity from outliving it.
        startToCloseTimeout: holdLeftMs + holderTtlMs,
        retry: { maximumAttempts: 1 },
        cancellationType: ActivityCancellationType.ABANDON,
        summary: `keep-alives of the holder of token ${lease.token}: one at least every ${holderTtlMs} ms`,
      },
      [{ key: lease.key, holder: lease.holder, token: lease.token }],
    ),
  );
  watching.then(
    () => (goneReason = 'the holder closed its keep-alive watch'),
    (error: unknown) => {
      if (!isCancellation(error)) goneReason = `no keep-alive from the holder within ${holderTtlMs} ms`;
    },
  );
  return {
    get goneReason() {
      return goneReason;
    },
    stop: () => scope.cancel(),
  };
}
