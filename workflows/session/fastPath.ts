import type { SessionAttempt } from '../../activities/lockActivities';
import { handoffCalls } from '../lockCalls';
import type { LockSession } from './lockSession';

/**
 * One attempt at the lock service's fast path for this session's request, counted in its state. The
 * lease, if granted, and its token come only from the lock service's answer to this call.
 */
export function tryFastPath(session: LockSession, why: string): Promise<SessionAttempt> {
  const { key, requester, request } = session;
  const attempts = ++session.state.attempts;
  return handoffCalls.tryAcquireLock.executeWithOptions({ summary: `${why}, attempt ${attempts}` }, [
    { key, requester, ttlMs: request.ttlMs, fairness: request.fairness, priority: request.priority },
  ]);
}
