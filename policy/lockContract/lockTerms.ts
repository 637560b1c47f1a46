// The lock contract's plain constants and the denial builder, without zod: workflow code imports
// them, and every module a workflow imports is evaluated again for each workflow the worker loads
// (bench/workflowLoadCost.ts). The schemas built from them live in lockSchemas.ts.

/** Hard ceiling on any lease TTL; each lock service may configure a lower maximum. */
export const ABSOLUTE_MAX_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Why the service said no. A closed set: each maps to the failure reason the retry decision reads.
 */
export const DENIAL_CODES = {
  HELD: 'lock held by another client',
  QUEUED: 'queued behind another waiter',
  EXPIRED_DURING_ACQUISITION: 'lease expired during acquisition',
  UNAVAILABLE: 'lock service unavailable',
  STALE_TOKEN: 'fencing token is no longer current',
  INVALID_REQUEST: 'request rejected as invalid',
  CREDENTIALS_REFUSED: "lock service refused the worker's credentials or permissions",
  QUEUE_FULL: "the key's queue is full: no ticket was taken",
  REQUESTER_LIMIT: 'the requester holds or waits for as many keys as the lock service allows',
} as const;
export type DenialCode = keyof typeof DENIAL_CODES;

/**
 * Builds a denial whose reason is the one its code maps to, from what the service saw (the rest of
 * lockSchemas.ts's `Denial`, which this module cannot name without importing zod's schemas).
 */
export function denial<Seen extends object>(
  code: DenialCode,
  seen: Seen,
): Seen & { code: DenialCode; reason: string } {
  return { code, reason: DENIAL_CODES[code], ...seen };
}

/**
 * How a key's waiters are ordered. FIFO: by arrival. priority-based: higher priority first, then by
 * arrival. no-starvation-guarantee: no ticket is taken and a free lock goes to whoever asks first.
 */
export const FAIRNESS_POLICIES = ['FIFO', 'priority-based', 'no-starvation-guarantee'] as const;

/**
 * Longest a waiter's queue ticket lives without the waiter asking again: a session's whole wait, its
 * longest budget (a day) or its longest escalation (a week), and a minute more.
 */
export const MAX_QUEUE_TICKET_MS = 8 * 24 * 60 * 60 * 1000;

/** How long the lock service keeps a waiter's place unless asked for another span. */
export const DEFAULT_QUEUE_TICKET_MS = 30_000;

/**
 * The span a session asks for its place. A parked waiter is woken by what can end its wait (a
 * release, a grant ahead of it, its budget, an operator, a deadlock notice), not by its ticket: the
 * ticket is long so that a waiter behind a healthy holder wakes twice an hour at most. A waiter whose
 * session is gone without leaving is skipped by the hand-off, so a long ticket blocks no one.
 */
export const SESSION_QUEUE_TICKET_MS = 60 * 60 * 1000;
