import { type AcquireRequestInput, parseAcquireRequest } from '../policy/acquireRequest';
import type { SessionOutcome } from '../policy/session';
import { nonRetryableOnBadInput } from '../temporal/failures';
import { acquireUntilHeld } from './session/acquirePhase';
import { holdUntilReleased } from './session/holdPhase';
import { LockSession } from './session/lockSession';
import { sessionMetrics } from './session/metricsSink';
import { installSessionHandlers } from './session/sessionHandlers';

/**
 * One acquisition session, as callers meet it: it acquires the lease (fast path, retry decisions
 * under guardrails, durable back-offs that a release cuts short, escalation to on-call), then holds
 * it (fenced renewals) until the caller releases it. The phases live in ./session.
 */
export async function acquireLock(input: AcquireRequestInput): Promise<SessionOutcome> {
  const request = await nonRetryableOnBadInput(() => parseAcquireRequest(input));
  const session = new LockSession(request);
  installSessionHandlers(session);
  const resumed = session.resumedLease;
  const acquired = resumed ? { lease: resumed } : await acquireUntilHeld(session);
  if (!resumed && !('resume' in acquired)) {
    const outcome = 'lease' in acquired ? 'acquired' : acquired.outcome.status;
    sessionMetrics.acquisitionEnded(outcome, session.waitedMs());
  }
  const end = 'lease' in acquired ? await holdUntilReleased(session, acquired.lease) : acquired;
  return session.end(end);
}
