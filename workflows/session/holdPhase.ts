// The hold phase: the lease kept by its keeper until a release or a loss, then the fenced release.
import {
  ActivityCancellationType,
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  sleep,
  type TemporalFailure,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../../policy/errors';
import {
  keeperHeartbeatTimeoutMs,
  keeperStartInMs,
  renewalIntervalMs,
} from '../../policy/decisions/leaseKeeping';
import type { FencedActionResult, Lease } from '../../policy/lockContract/lockSchemas';
import { handoffCalls, lockServiceUnreachable } from '../lockCalls';
import { sessionMetrics } from './metricsSink';
import { type CarriedHold, historyFull } from './holdHandover';
import type { LockSession, PhaseEnd } from './lockSession';
import { watchHolder } from './holderLiveness';
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
 * caller asks for a release (fenced by the same token), the lease is lost, the hold limit is reached,
 * or the holder's keep-alives stop. Cancelled while it holds (an operator's `temporal workflow
 * cancel`, a withLock parent's cancellation), it lets go, fenced, and then ends cancelled. A hold
 * whose history grows past HOLD_HISTORY_EVENTS (messages) continues as new, and `carried` is what
 * the next run goes on from.
 */
export async function holdUntilReleased(
  session: LockSession,
  lease: Lease,
  carried?: CarriedHold,
): Promise<PhaseEnd> {
  session.holdGranted(lease, carried !== undefined);
  session.enter('holding', `holding ${session.key} with token ${lease.token}`);
  try {
    if (session.request.notifyParent && !carried) await tellParent({ status: 'acquired', lease });
    const limitAt = carried?.limitAt ?? Date.now() + session.request.maxHoldMs;
    return await keptUntilReleased(session, lease, limitAt, carried !== undefined);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    await CancellationScope.nonCancellable(() => releaseHeld(session, lease));
    throw error;
  }
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
 * The session lets the lease go on its own (the hold limit, or the holder gone): released, fenced, the
 * head woken, and the holder, if it is still there, finds the lease lost, with why.
 */
async function letGo(
  session: LockSession,
  lease: Lease,
  why: 'hold-limit' | 'holder-gone',
  reason: string,
): Promise<PhaseEnd> {
  const released = await releaseWhileTimeLeft(lease);
  session.releaseAnswered(released);
  sessionMetrics.leaseLost(why);
  const said = `${reason}: ${released.ok ? `released token ${lease.token}, fenced` : `release refused: ${released.reason}`}`;
  session.enter('lease-lost', said);
  return {
    kind: 'ended',
    outcome: { status: 'lease-lost', lease, attempts: session.attempts, reason: said },
  };
}

/**
 * The hold as a keeper keeps it: the workflow waits, with one timer (the hold limit), for the caller's
 * release, the keeper's word that the lease is lost, or the holder's keep-alives to stop (a holder
 * outside a workflow: watchHolder). A release cancels the keeper (the release activity also stops it
 * in its own process) and releases, fenced by the same token. A fresh hold first waits half a renewal
 * interval for a release with no keeper and no watch at all: nothing is due before then, and a holder
 * that dies meanwhile is found half an interval later.
 */
async function keptUntilReleased(
  session: LockSession,
  lease: Lease,
  limitAt: number,
  resumed: boolean,
): Promise<PhaseEnd> {
  const { ttlMs, maxHoldMs, holderTtlMs } = session.request;
  const renewEveryMs = renewalIntervalMs(ttlMs);
  const leftMs = () => Math.max(0, limitAt - Date.now());
  // A hold given back before its lease is near due needs no keeper; a resumed one is due already.
  const startInMs = resumed ? 0 : Math.min(keeperStartInMs(renewEveryMs), leftMs());
  const released = await condition(() => session.releaseRequested, startInMs, {
    summary: `hold token ${lease.token}: a keeper starts in ${startInMs} ms unless released`,
  });
  if (released) return releaseHeld(session, lease);
  if (leftMs() === 0)
    return letGo(session, lease, 'hold-limit', `the hold limit of ${maxHoldMs} ms was reached`);
  const holderWatch = holderTtlMs ? watchHolder(lease, holderTtlMs, leftMs()) : null;
  const keeperScope = new CancellationScope();
  const keeping = keeperScope.run(() =>
    keepLease.executeWithOptions(
      {
        startToCloseTimeout: '1 day',
        heartbeatTimeout: keeperHeartbeatTimeoutMs(ttlMs),
        summary: `keep token ${lease.token}: renew every ${renewEveryMs} ms`,
        // Nothing waits for the cancelled keeper: answered when it has stopped, its cancellation
        // costs the release's workflow task no activation.
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      },
      [lease, { renewEveryMs }],
    ),
  );
  let keeperEnded = false;
  const ended = () => (keeperEnded = true);
  void keeping.then(ended, ended);
  await condition(
    () => session.releaseRequested || keeperEnded || holderWatch?.goneReason != null || historyFull(),
    leftMs(),
    {
      summary: `hold token ${lease.token}: at most ${maxHoldMs} ms in all`,
    },
  );
  holderWatch?.stop();
  if (keeperEnded && !session.releaseRequested) {
    // A keeper that failed for good (the deny gate, bad input) fails the session, as a renewal did.
    const { reason } = await keeping;
    sessionMetrics.leaseLost('renewal');
    session.enter('lease-lost', `lease lost: ${reason}`);
    return { kind: 'ended', outcome: { status: 'lease-lost', lease, attempts: session.attempts, reason } };
  }
  keeperScope.cancel();
  keeping.catch(() => undefined); // cancelled on purpose: its failure is expected and not wanted
  if (session.releaseRequested) return releaseHeld(session, lease);
  if (holderWatch?.goneReason) return letGo(session, lease, 'holder-gone', holderWatch.goneReason);
  // The next run reads the lease from the lock service and starts its own keeper and watch; this
  // run's keeper stops at its next heartbeat (its run closed), having renewed at most once more.
  if (leftMs() > 0 && historyFull())
    return { kind: 'continued', resume: session.resumeHolding(lease, limitAt) };
  return letGo(session, lease, 'hold-limit', `the hold limit of ${maxHoldMs} ms was reached`);
}

/** How long a session waits before it calls a lock service it could not reach again. */
const UNREACHABLE_RETRY_MS = 1_000;

// A release the lock service could not be reached for is tried again until the lease's deadline; past
// it the service has let the lease expire, which is what the answer says.
function releaseWhileTimeLeft(lease: Lease): Promise<FencedActionResult> {
  return retryUntil(
    () =>
      handoffCalls.releaseFencedLease.executeWithOptions({ summary: `release token ${lease.token}` }, [
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
