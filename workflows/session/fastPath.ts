import { log } from '@temporalio/workflow';
import type { SessionAttempt } from '../../activities/lockActivities';
import { fastPathRequest } from '../../policy/firstAttempt';
import { denial } from '../../policy/lockTerms';
import { handoffCalls, lockCalls, lockServiceUnreachable } from '../lockCalls';
import type { LockSession } from './lockSession';
import { sessionMetrics } from './metricsSink';

// The acquisition phase's calls at the key's queue: the fast path, and leaving the queue.

/**
 * One attempt at the lock service's fast path for this session's request, counted in its state. The
 * lease, if granted, and its token come only from the lock service's answer to this call. A grant
 * that follows a release's wake-up is a hand-off, measured on the lock service's clock.
 */
export async function tryFastPath(session: LockSession, why: string): Promise<SessionAttempt> {
  const attempts = session.beginAttempt();
  // The wait-for graph is read when the situation may have changed: at the first denial, or when the
  // key's holder is not the one last seen. A cycle forms only when someone starts waiting or a key
  // changes hands, and whoever closes it sees it then.
  const seen = session.lastDenial ? { holder: session.lastDenial.holder } : undefined;
  let attempt: SessionAttempt;
  try {
    attempt = await handoffCalls.tryAcquireLock.executeWithOptions(
      { summary: `${why}, attempt ${attempts}` },
      [fastPathRequest(session.request, session.ticketSpanMs()), seen],
    );
  } catch (error) {
    if (!lockServiceUnreachable(error)) throw error;
    attempt = unreachableDenial();
  }
  return noteAttempt(session, attempt);
}

/**
 * The service is down: a denial like any other (no holder known, no place), so the session backs off
 * under its budget and tries again, rather than failing while the service restarts.
 */
export function unreachableDenial(): SessionAttempt {
  const seen = { holder: null, holderLeaseUntil: null, waiters: 0, position: null, serviceTime: Date.now() };
  return { granted: false, denial: denial('UNAVAILABLE', seen) };
}

/** Counts an attempt's answer in the session's state (a hand-off, when a release's wake-up led to it). */
export function noteAttempt(session: LockSession, attempt: SessionAttempt): SessionAttempt {
  const handoffMs = session.noteAttempt(attempt);
  if (handoffMs !== undefined) sessionMetrics.handedOff(handoffMs);
  return attempt;
}

/** Gives up the session's place in the key's queue, so a session that stops waiting blocks no one. */
export async function leaveQueue(session: LockSession, why: string): Promise<void> {
  try {
    await lockCalls.leaveQueue.executeWithOptions({ summary: `leave the queue: ${why}` }, [
      { key: session.key, requester: session.requester },
    ]);
  } catch (error) {
    if (!lockServiceUnreachable(error)) throw error;
    // Unreachable now: the place lapses on its own when its ticket does, and blocks no one for long.
    log.warn('could not leave the queue: the lock service was unreachable', { key: session.key });
  }
}
