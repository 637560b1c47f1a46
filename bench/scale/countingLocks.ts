// A lock service that counts the calls made on it, by method: what the scale bench reports per
// second.
import type { LockService } from '../../locks/lockService';

/** The lock-service calls a worker made, by method. */
export type CallCounts = Record<string, number>;

type Method = {
  [K in keyof LockService]: LockService[K] extends (...args: never[]) => Promise<unknown> ? K : never;
}[keyof LockService];

// Every call the service answers except close; a record so that a method added to the contract
// fails to compile here until it is counted.
const COUNTED = Object.keys({
  tryAcquire: true,
  inspect: true,
  renew: true,
  release: true,
  position: true,
  leave: true,
  holdings: true,
  waits: true,
  stalledQueues: true,
  leasesRunningLow: true,
  forgetIdleKeys: true,
} satisfies Record<Exclude<Method, 'close'>, true>) as Exclude<Method, 'close'>[];

/** The same lock service, counting every call by method (what idle waiters cost the service). */
export function countEveryCall(locks: LockService): { service: LockService; counts: CallCounts } {
  const counts: CallCounts = Object.fromEntries(COUNTED.map((m) => [m, 0]));
  const service = Object.create(locks) as LockService;
  for (const method of COUNTED) {
    const original = locks[method].bind(locks) as (...args: unknown[]) => Promise<unknown>;
    (service as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      counts[method]!++;
      return original(...args);
    };
  }
  return { service, counts };
}
