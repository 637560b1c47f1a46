import { condition, patched, sleep, type TemporalFailure, workflowInfo } from '@temporalio/workflow';
import type { RenewalResult } from '../../activities/lockActivities';
import { LATENCY_FLOOR_MS } from '../../policy/constants';
import type { FencedActionResult, Lease } from '../../policy/lockSchemas';
import { handoffCalls, lockCalls, lockServiceUnreachable } from '../lockCalls';
import { RENEWAL_IN_WORKFLOW_TASK } from '../patches';
import type { LockSession, PhaseEnd } from './lockSession';
import { tellParent } from './peerSignals';

/** A holding session renews at this fraction of the TTL: reviewed here, never taken from a decision. */
const RENEW_FRACTION = 1 / 3;

/**
 * The hold: renews the lease only while the lock service still shows the token it issued, until the
 * caller asks for a release (fenced by the same token) or the lease is lost. Ends with the session's
 * end, or by continuing as new with the lease.
 */
export async function holdUntilReleased(session: LockSession, acquired: Lease): Promise<PhaseEnd> {
  let lease = acquired;
  session.holdGranted(lease);
  session.enter('holding', `holding ${session.key} with token ${lease.token}`);
  if (session.request.notifyParent) await tellParent({ status: 'acquired', lease });
  const renewEveryMs = Math.max(LATENCY_FLOOR_MS, Math.floor(session.request.ttlMs * RENEW_FRACTION));
  // A run continued from another renews first: the hand-over itself took part of the interval.
  let renewFirst = session.resumedLease !== null;
  while (!session.releaseRequested) {
    if (!renewFirst) {
      const released = await condition(() => session.releaseRequested, renewEveryMs, {
        summary: `hold token ${lease.token}: renew in ${renewEveryMs} ms`,
      });
      if (released) break;
    }
    renewFirst = false;
    const renewal = await renewWhileTimeLeft(lease);
    if (!renewal.ok) {
      session.enter('lease-lost', `lease lost: ${renewal.reason}`);
      return {
        kind: 'ended',
        outcome: { status: 'lease-lost', lease, attempts: session.attempts, reason: renewal.reason },
      };
    }
    lease = { ...lease, leaseUntil: renewal.leaseUntil };
    session.renewed(lease);
    if (workflowInfo().continueAsNewSuggested && !session.releaseRequested) {
      return { kind: 'continued', resume: session.resume(lease) };
    }
  }

  // The release activity wakes the head of the queue itself: the hand-off waits for no task of ours.
  const released = await releaseWhileTimeLeft(lease);
  session.releaseAnswered(released);
  if (!released.ok) {
    const reason = `release refused: ${released.reason}`;
    session.enter('lease-lost', reason);
    return { kind: 'ended', outcome: { status: 'lease-lost', lease, attempts: session.attempts, reason } };
  }
  session.enter('released', `released token ${lease.token}`);
  return {
    kind: 'ended',
    outcome: { status: 'released', lease, attempts: session.attempts, heldMs: session.heldMs() },
  };
}

/** How long a session waits before it calls a lock service it could not reach again. */
const UNREACHABLE_RETRY_MS = 1_000;

// A renewal the lock service could not be reached for is tried again while the lease may still be
// renewed in time (as the workflow's clock sees it): past that, the lease is lost whatever the
// service would say.
function renewWhileTimeLeft(lease: Lease): Promise<RenewalResult> {
  return retryUntil(
    () =>
      (patched(RENEWAL_IN_WORKFLOW_TASK) ? handoffCalls : lockCalls).renewLease.executeWithOptions(
        { summary: `renew token ${lease.token}` },
        [lease],
      ),
    {
      deadline: lease.leaseUntil - UNREACHABLE_RETRY_MS,
      again: `lock service unreachable: renew token ${lease.token} again`,
      gaveUp: (error) => ({
        ok: false,
        reason: `the lock service could not be reached before the lease ran out (${error.message})`,
      }),
    },
  );
}

// A release the lock service could not be reached for is tried again until the lease's deadline; past
// it the service has let the lease expire, which is what the answer says.
function releaseWhileTimeLeft(lease: Lease): Promise<FencedActionResult> {
  return retryUntil(
    () => handoffCalls.releaseLock.executeWithOptions({ summary: `release token ${lease.token}` }, [lease]),
    {
      deadline: lease.leaseUntil,
      again: `lock service unreachable: release token ${lease.token} again`,
      gaveUp: () => ({ ok: false, reason: 'expired', serviceTime: Date.now() }),
    },
  );
}

/**
 * Makes a lock call; while the lock service cannot be reached, makes it again every
 * UNREACHABLE_RETRY_MS until `deadline` (workflow clock), and then answers with `gaveUp`. Any other
 * failure is thrown.
 */
async function retryUntil<T>(
  call: () => Promise<T>,
  { deadline, again, gaveUp }: { deadline: number; again: string; gaveUp: (error: TemporalFailure) => T },
): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!lockServiceUnreachable(error)) throw error;
      if (Date.now() >= deadline) return gaveUp(error);
      await sleep(UNREACHABLE_RETRY_MS, { summary: again });
    }
  }
}
