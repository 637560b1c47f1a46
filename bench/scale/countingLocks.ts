import type { LockService } from '../../locks/lockService';

/** The lock-service calls a worker made, by method. */
export type CallCounts = Record<string, number>;

const COUNTED = [
  'tryAcquire',
  'inspect',
  'renew',
  'release',
  'position',
  'leave',
  'holdings',
  'waits',
  'stalledQueues',
] as const;

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
