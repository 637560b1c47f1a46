import type { SessionAttempt } from '../../activities/lockActivities';
import { denial } from '../../policy/lockSchemas';
import { handoffCalls, lockServiceUnreachable } from '../lockCalls';
import type { LockSession } from './lockSession';
import { sessionMetrics } from './metricsSink';

/**
 * One attempt at the lock service's fast path for this session's request, counted in its state. The
 * lease, if granted, and its token come only from the lock service's answer to this call. A grant
 * that follows a release's wake-up is a hand-off, measured on the lock service's clock.
 */
export async function tryFastPath(session: LockSession, why: string): Promise<SessionAttempt> {
  const { key, requester, request } = session;
  const attempts = ++session.state.attempts;
  let attempt: SessionAttempt;
  try {
    attempt = await handoffCalls.tryAcquireLock.executeWithOptions(
      { summary: `${why}, attempt ${attempts}` },
      [{ key, requester, ttlMs: request.ttlMs, fairness: request.fairness, priority: request.priority }],
    );
  } catch (error) {
    if (!lockServiceUnreachable(error)) throw error;
    // The service is down: a denial like any other (no holder known, no place), so the session backs
    // off under its budget and tries again, rather than failing while the service restarts.
    const seen = {
      holder: null,
      holderLeaseUntil: null,
      waiters: 0,
      position: null,
      serviceTime: Date.now(),
    };
    attempt = { granted: false, denial: denial('UNAVAILABLE', seen) };
  }
  session.state.waitedMs = session.waitedMs();
  const releasedAt = session.releasedAt;
  if (attempt.granted) {
    if (releasedAt !== undefined && attempt.lease.grantedAt >= releasedAt)
      sessionMetrics.handedOff(attempt.lease.grantedAt - releasedAt);
    session.releasedAt = undefined;
    session.state.place = null;
  } else {
    // A release that woke us during this call still counts for the next try; an older one does not.
    if (!session.woken) session.releasedAt = undefined;
    session.state.place = attempt.denial.position;
  }
  return attempt;
}
