// How long a session may hold, and how a holder outside a workflow proves it is alive: reviewed
// limits, checked against the worker's maxima where a request is checked.

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/**
 * The hold limit a request gets when it sets none: at the limit the session lets go, fenced, and the
 * holder learns it lost the lease. Long enough for a nightly job; a detached hold an operator forgot
 * ends within the hour.
 */
export const DEFAULT_MAX_HOLD_MS = HOUR_MS;

/** The longest hold limit a worker allows unless its operator sets another (LOCKWARDEN_MAX_HOLD_MS). */
export const DEFAULT_OPERATOR_MAX_HOLD_MS = 24 * HOUR_MS;

/** The longest hold limit any request may ask for. */
export const ABSOLUTE_MAX_HOLD_MS = 7 * 24 * HOUR_MS;

/**
 * How long a holder outside a workflow (acquire(), `lockctl acquire`) may go without a keep-alive
 * before its session lets the lease go, unless its request sets another: a process that died is
 * found within this and one renewal interval, while one GC pause or one lost keep-alive (there are
 * three in this span) costs no lease. etcd's session defaults to 60 s, Redisson's watchdog to 30 s;
 * a lock a dead process holds blocks everyone behind it, so lockwarden's is shorter.
 */
export const DEFAULT_HOLDER_TTL_MS = 15_000;

/** The longest holder TTL a worker allows unless its operator sets another (LOCKWARDEN_MAX_HOLDER_TTL_MS). */
export const DEFAULT_OPERATOR_MAX_HOLDER_TTL_MS = 10 * MINUTE_MS;

/** The shortest holder TTL: a keep-alive every second, which a busy event loop can still keep. */
export const MIN_HOLDER_TTL_MS = 3_000;

/** The longest holder TTL any request may ask for. */
export const ABSOLUTE_MAX_HOLDER_TTL_MS = HOUR_MS;

/** A holder sends keep-alives at this fraction of its holder TTL: two may be lost in a row. */
export const KEEP_ALIVE_FRACTION = 1 / 3;

/** How often a holder with `holderTtlMs` sends a keep-alive. */
export function keepAliveIntervalMs(holderTtlMs: number): number {
  return Math.floor(holderTtlMs * KEEP_ALIVE_FRACTION);
}

/**
 * The id of the activity a holding session keeps for its holder's keep-alives (one per lease, named
 * by its token): a keep-alive reaches the hold of this token only, so a run that holds another token
 * (a reset run that found the lease gone) is never kept alive by a holder of the old one.
 */
export function holderLivenessActivityId(token: string): string {
  return `holder-keep-alives/${token}`;
}

/** The maxima a worker's operator sets for the requests its sessions accept. */
export interface OperatorHoldLimits {
  maxHoldMs: number;
  maxHolderTtlMs: number;
}

/** The maxima when the operator sets none. */
export const DEFAULT_OPERATOR_HOLD_LIMITS: OperatorHoldLimits = {
  maxHoldMs: DEFAULT_OPERATOR_MAX_HOLD_MS,
  maxHolderTtlMs: DEFAULT_OPERATOR_MAX_HOLDER_TTL_MS,
};

/**
 * A request's hold limit and holder TTL against the worker's maxima: the hold limit it asked for, or
 * the default (never above the maximum); each field above its maximum is a problem, said with the
 * setting that allows more. A holder TTL stays absent when the request set none (a durable holder).
 */
export function holdLimitsOf(
  request: { maxHoldMs?: number; holderTtlMs?: number },
  limits: OperatorHoldLimits,
): { ok: true; maxHoldMs: number } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  if (request.maxHoldMs !== undefined && request.maxHoldMs > limits.maxHoldMs)
    problems.push(
      `maxHoldMs: ${request.maxHoldMs} is above this worker's maximum of ${limits.maxHoldMs} ms (LOCKWARDEN_MAX_HOLD_MS)`,
    );
  if (request.holderTtlMs !== undefined && request.holderTtlMs > limits.maxHolderTtlMs)
    problems.push(
      `holderTtlMs: ${request.holderTtlMs} is above this worker's maximum of ${limits.maxHolderTtlMs} ms (LOCKWARDEN_MAX_HOLDER_TTL_MS)`,
    );
  if (problems.length) return { ok: false, problems };
  return { ok: true, maxHoldMs: request.maxHoldMs ?? Math.min(DEFAULT_MAX_HOLD_MS, limits.maxHoldMs) };
}
