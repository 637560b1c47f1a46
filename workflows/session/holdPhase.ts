import {
  ActivityCancellationType,
  CancellationScope,
  condition,
  patched,
  proxyActivities,
  sleep,
  type TemporalFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { RenewalResult } from '../../activities/lockActivities';
import { NON_RETRYABLE_ERROR_TYPES } from '../../policy/errors';
import { keeperHeartbeatTimeoutMs, keeperStartInMs, renewalIntervalMs } from '../../policy/leaseKeeping';
import type { FencedActionResult, Lease } from '../../policy/lockSchemas';
import { handoffCalls, lockCalls, lockServiceUnreachable } from '../lockCalls';
import { RENEWAL_IN_WORKFLOW_TASK } from '../patches';
import { sessionMetrics } from './metricsSink';
import type { LockSession, PhaseEnd } from './lockSession';
import { tellParent } from './peerSignals';

/**
 * The lease keeper (activities/leaseKeeper.ts): one activity for the whole hold, with a heartbeat
 * timeout set per lease (keeperHeartbeatTimeoutMs). Retried without limit: a keeper that keeps
 * failing ends when a renewal finds the lease run out. A hold longer than a day goes on in the next
 * attempt.
 */
const { keepLease } = proxyActivities<Activities>({
  startToCloseTimeout: '1 day',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '1 second',
    nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
  },
});

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
  const renewEveryMs = renewalIntervalMs(session.request.ttlMs);
  // A run continued from another renews first: the hand-over itself took part of the interval.
  let renewFirst = session.resumedLease !== null;
  if (session.paths.leaseKeptByActivity)
    return keptUntilReleased(session, lease, { renewEveryMs, renewFirst });
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

  return releaseHeld(session, lease);
}

// The release activity wakes the head of the queue itself: the hand-off waits for no task of ours.
async function releaseHeld(session: LockSession, lease: Lease): Promise<PhaseEnd> {
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

/**
 * The hold as a keeper keeps it: the workflow waits, with no timer, for the caller's release or the
 * keeper's word that the lease is lost. A release cancels the keeper (the release activity also
 * stops it in its own process) and releases, fenced by the same token. A fresh hold first waits half
 * a renewal interval for a release with no keeper at all: nothing is due before then.
 */
async function keptUntilReleased(
  session: LockSession,
  lease: Lease,
  plan: { renewEveryMs: number; renewFirst: boolean },
): Promise<PhaseEnd> {
  if (session.paths.leanWorkflowTasks && !plan.renewFirst) {
    // A hold given back before its lease is near due needs no keeper (LEAN_WORKFLOW_TASKS).
    const startInMs = keeperStartInMs(plan.renewEveryMs);
    const released = await condition(() => session.releaseRequested, startInMs, {
      summary: `hold token ${lease.token}: a keeper starts in ${startInMs} ms unless released`,
    });
    if (released) return releaseHeld(session, lease);
  }
  const keeperScope = new CancellationScope();
  const keeping = keeperScope.run(() =>
    keepLease.executeWithOptions(
      {
        startToCloseTimeout: '1 day',
        heartbeatTimeout: keeperHeartbeatTimeoutMs(session.request.ttlMs),
        summary: `keep token ${lease.token}: renew every ${plan.renewEveryMs} ms`,
        // Nothing waits for the cancelled keeper: answered when it has stopped, its cancellation
        // costs the release's workflow task no activation (LEAN_WORKFLOW_TASKS).
        ...(session.paths.leanWorkflowTasks
          ? { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED }
          : {}),
      },
      [lease, plan],
    ),
  );
  let keeperEnded = false;
  const ended = () => (keeperEnded = true);
  void keeping.then(ended, ended);
  await condition(() => session.releaseRequested || keeperEnded);
  if (!session.releaseRequested) {
    // A keeper that failed for good (the deny gate, bad input) fails the session, as a renewal did.
    const { reason } = await keeping;
    sessionMetrics.leaseLost('renewal');
    session.enter('lease-lost', `lease lost: ${reason}`);
    return { kind: 'ended', outcome: { status: 'lease-lost', lease, attempts: session.attempts, reason } };
  }
  keeperScope.cancel();
  keeping.catch(() => undefined); // cancelled on purpose: its failure is expected and not wanted
  return releaseHeld(session, lease);
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
    () =>
      handoffCalls.releaseLock.executeWithOptions({ summary: `release token ${lease.token}` }, [
        lease,
        'session',
      ]),
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
