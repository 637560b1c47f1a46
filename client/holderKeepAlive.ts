// A holder's keep-alives: the process that acquired proves, while it lives, that it still holds.
import {
  ActivityCancelledError,
  ActivityNotFoundError,
  type Client,
  WorkflowNotFoundError,
} from '@temporalio/client';
import { holderLivenessActivityId, keepAliveIntervalMs } from '../policy/decisions/holdLimits';
import { LeaseLostError } from '../policy/errors';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { isSessionState, type StateAnswer } from '../policy/sessionModel/sessionTypes';
import { sessionState } from '../temporal/messages';

/** A lease this process keeps alive, and the signal that says when it is lost. */
export interface HolderKeepAlive {
  /** Aborted, with a LeaseLostError, once the session is found to hold this lease no more. */
  readonly signal: AbortSignal;
  /** Stops the keep-alives (after a release): nothing is lost then, the signal stays as it is. */
  stop(): void;
}

/**
 * Keeps the hold of `lease` by the session `workflowId` alive from this process: every third of
 * `holderTtlMs` it heartbeats the activity the hold keeps open for its holder (awaitHolderKeepAlives,
 * one heartbeat RPC, no history event). When this process dies, the heartbeats stop, the activity
 * times out and the session lets the lease go, fenced. The timer does not keep the process alive: a
 * process with nothing else to do exits, and its lease ends as a dead holder's does.
 *
 * A heartbeat the session no longer takes (its watch is over: released, let go, ended) is told apart
 * from one sent before its watch began (the hold starts it half a renewal interval in) by asking the
 * session whether it still holds this token; only a session that does not aborts the signal.
 */
export function keepHolderAlive(
  client: Client,
  workflowId: string,
  lease: Lease,
  holderTtlMs: number,
): HolderKeepAlive {
  const lost = new AbortController();
  const activity = { workflowId, activityId: holderLivenessActivityId(lease.token) };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const lose = (why: string) => {
    if (stopped) return;
    stopped = true;
    lost.abort(new LeaseLostError(lease.key, why));
  };
  const beat = async () => {
    try {
      // Bounded by the interval: a keep-alive Temporal did not take in time is the next one's to send.
      const everyMs = keepAliveIntervalMs(holderTtlMs);
      await client.withDeadline(Date.now() + everyMs, () => client.activity.heartbeat(activity));
    } catch (error) {
      if (error instanceof ActivityCancelledError) lose('its session stopped watching its holder');
      else if (error instanceof ActivityNotFoundError && !(await stillHolds(client, workflowId, lease)))
        lose(
          'its session holds it no more (released, let go at its hold limit or after missed keep-alives, or ended)',
        );
      // Anything else (Temporal out of reach for a moment) is tried again at the next beat.
    }
    if (!stopped) timer = setTimeout(() => void beat(), keepAliveIntervalMs(holderTtlMs)).unref();
  };
  timer = setTimeout(() => void beat(), keepAliveIntervalMs(holderTtlMs)).unref();
  return {
    signal: lost.signal,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

// Whether the session still holds this lease: a closed session does not; a running one says, in its
// answer to the state query. One that cannot be asked now (Temporal or its worker out of reach) is
// given the benefit of the doubt until the next beat.
async function stillHolds(client: Client, workflowId: string, lease: Lease): Promise<boolean> {
  const handle = client.workflow.getHandle(workflowId);
  try {
    if ((await handle.describe()).status.name !== 'RUNNING') return false;
    const answer: StateAnswer = await handle.query(sessionState);
    // A run that continued as new while holding checks its request before it holds on: its first
    // moments answer `checking-request`, and the next beat asks again.
    if (!isSessionState(answer)) return true;
    return answer.phase === 'holding' && answer.lease?.token === lease.token;
  } catch (error) {
    return !(error instanceof WorkflowNotFoundError);
  }
}
