// Every answer of a lock service parsed before lockwarden uses it: what it did not write is refused.
import { z } from 'zod';
import { CorruptLockStateError, describeIssues } from '../policy/errors';
import {
  denialSchema,
  fencingTokenSchema,
  holderSchema,
  leaseSchema,
  lockKeySchema,
} from '../policy/lockContract/lockSchemas';
import type { LockService } from './lockService';

const time = z.number().int().nonnegative();
const ticketSchema = z.object({
  requester: holderSchema,
  priority: z.number().int().min(0).max(1_000),
  since: time.nullable(),
  expiresAt: time.nullable(),
});
const lockRecordSchema = z.object({
  key: lockKeySchema,
  holder: holderSchema.nullable(),
  token: fencingTokenSchema.nullable(),
  leaseUntil: time.nullable(),
  lastToken: fencingTokenSchema.nullable(),
  waiters: z.array(holderSchema),
  queue: z.array(ticketSchema),
  serviceTime: time,
});
const attemptSchema = z.union([
  z.object({ granted: z.literal(true), lease: leaseSchema }),
  z.object({ granted: z.literal(false), denial: denialSchema }),
]);
const fencedResultSchema = z.union([
  z.object({ ok: z.literal(true), serviceTime: time, leaseUntil: time.optional() }),
  z.object({
    ok: z.literal(false),
    reason: z.enum(['not-holder', 'stale-token', 'expired']),
    serviceTime: time,
  }),
]);
const holdingSchema = z.object({
  key: lockKeySchema,
  holder: holderSchema,
  token: fencingTokenSchema,
  leaseUntil: time,
  owner: holderSchema.nullable(),
});
const waitSchema = z.object({
  key: lockKeySchema,
  requester: holderSchema,
  position: z.number().int().positive(),
  owner: holderSchema.nullable(),
});
const stalledSchema = z.object({ key: lockKeySchema, waiters: z.array(holderSchema) });
const lowLeaseSchema = z.object({
  key: lockKeySchema,
  holder: holderSchema,
  token: fencingTokenSchema,
  leaseUntil: time,
  ttlMs: z.number().int().positive(),
  remainingMs: z.number().int(),
});

// The answer, checked: a record that fails its schema is CorruptLockState naming the key it is about
// and every field at fault.
function checked<T>(schema: z.ZodType<T>, answer: unknown, key: (answer: unknown) => string): T {
  const result = schema.safeParse(answer);
  if (result.success) return result.data;
  throw new CorruptLockStateError(key(answer), describeIssues(result.error));
}

/**
 * A list read (every holding, ticket, stalled queue or low lease), entry by entry: an entry that is
 * not lockwarden's is left out and reported to `onCorrupt`, so one bad record stops no one else's
 * wait-for graph or sweep (a read of that key itself still fails).
 */
function checkedList<T>(
  schema: z.ZodType<T>,
  answer: unknown[],
  onCorrupt: (error: CorruptLockStateError) => void,
): T[] {
  return answer.flatMap((entry) => {
    const result = schema.safeParse(entry);
    if (result.success) return [result.data];
    const key = (entry as { key?: unknown } | null)?.key;
    onCorrupt(
      new CorruptLockStateError(
        typeof key === 'string' ? key : '(unknown key)',
        describeIssues(result.error),
      ),
    );
    return [];
  });
}

/**
 * `inner`, with every lease, denial, record, holding, ticket and fenced result it answers parsed
 * against lockwarden's schemas: a value lockwarden did not write (a token that is not a token, a
 * holder name with control characters, a negative time) is a CorruptLockState failure naming the key,
 * never a lease, and never an outage that a retry would wait out; a list read leaves such entries out
 * and reports each to `onCorrupt`. openLockService wraps every backend.
 */
export function checkedLockService(
  inner: LockService,
  onCorrupt: (error: CorruptLockStateError) => void = () => undefined,
): LockService {
  return {
    backend: inner.backend,
    minTtlMs: inner.minTtlMs,
    async tryAcquire(request) {
      return checked(attemptSchema, await inner.tryAcquire(request), () => String(request.key));
    },
    async inspect(key) {
      return checked(lockRecordSchema, await inner.inspect(key), () => key);
    },
    async renew(target) {
      return checked(fencedResultSchema, await inner.renew(target), () => target.key);
    },
    async release(target) {
      return checked(fencedResultSchema, await inner.release(target), () => target.key);
    },
    async position(waiter) {
      return checked(z.number().int().positive().nullable(), await inner.position(waiter), () => waiter.key);
    },
    leave: (waiter) => inner.leave(waiter),
    async holdings() {
      return checkedList(holdingSchema, await inner.holdings(), onCorrupt);
    },
    async waits() {
      return checkedList(waitSchema, await inner.waits(), onCorrupt);
    },
    async stalledQueues() {
      return checkedList(stalledSchema, await inner.stalledQueues(), onCorrupt);
    },
    async leasesRunningLow(fractionLeft) {
      return checkedList(lowLeaseSchema, await inner.leasesRunningLow(fractionLeft), onCorrupt);
    },
    forgetIdleKeys: () => inner.forgetIdleKeys(),
    close: () => inner.close(),
  };
}
