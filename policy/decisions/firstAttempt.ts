// What a session's fast path asks the lock service, in one place: the session asks it from workflow
// code, and a fresh session's first attempt is made in the activity that checks its request.
import type { AcquireRequest } from './acquireRequest';
import { constraintRules, tightenBudget } from './constraints';
import type { TryAcquireRequest } from '../lockContract/lockSchemas';
import { ticketSpanMs } from './waiting';

/** The lock service's fast-path request for `request`, asking for a place in the queue of `queueTicketMs`. */
export function fastPathRequest(request: AcquireRequest, queueTicketMs: number): TryAcquireRequest {
  const { key, requester, ttlMs, fairness, priority, owner } = request;
  return { key, requester, ttlMs, fairness, priority, queueTicketMs, ...(owner ? { owner } : {}) };
}

/**
 * The fast-path request of a fresh session's first attempt, as the session itself would ask it
 * before it has waited at all (LockSession.ticketSpanMs with the harness rules: the whole budget).
 */
export function firstFastPathRequest(request: AcquireRequest): TryAcquireRequest {
  const budget = tightenBudget(request.budget, constraintRules(request.constraints));
  return fastPathRequest(request, ticketSpanMs(budget.maxTotalWaitMs, request.escalationTimeoutMs));
}
