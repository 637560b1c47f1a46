// Waiting for a backend's server at open: a restart or a failover takes seconds.
import { setTimeout as delay } from 'node:timers/promises';

/** How long a backend's open waits for its server by default: a restart or a failover takes seconds. */
export const DEFAULT_CONNECT_WAIT_MS = 60_000;

// Errors that say the server is not there yet (or is starting), not that the request is wrong:
// refused, reset or timed-out sockets, and PostgreSQL's "cannot connect now" while it starts up.
const NOT_THERE_YET = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  '57P03',
]);

/** Whether an error means the server could not be reached (yet). */
function serverNotReachable(error: unknown): boolean {
  for (let e: unknown = error; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_THERE_YET.has(code)) return true;
    const errors = (e as { errors?: unknown }).errors; // an AggregateError of IPv4 and IPv6 attempts
    if (Array.isArray(errors) && errors.some(serverNotReachable)) return true;
  }
  return false;
}

/**
 * Runs `connect` until it succeeds, trying again while the server cannot be reached, for up to
 * `waitMs`: a worker started while its lock server restarts waits for it instead of exiting. Any
 * other error, and the last one once the time is up, is thrown.
 */
export async function untilReachable<T>(
  connect: () => Promise<T>,
  waitMs = DEFAULT_CONNECT_WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (let pauseMs = 100; ; pauseMs = Math.min(2_000, pauseMs * 2)) {
    try {
      return await connect();
    } catch (error) {
      if (!serverNotReachable(error) || Date.now() + pauseMs > deadline) throw error;
      await delay(pauseMs);
    }
  }
}
