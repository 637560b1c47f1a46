// The plain constants these schemas are built from live in lockTerms.ts, which workflow code imports
// without zod; they are re-exported here for the edges.
import { z } from 'zod';
import { describeIssues, InvalidLockRequestError } from '../errors';
import { credentialLookalike, identifierProblem, keyCredentialLookalike } from './identifiers';
import {
  ABSOLUTE_MAX_TTL_MS,
  DEFAULT_QUEUE_TICKET_MS,
  DENIAL_CODES,
  type DenialCode,
  FAIRNESS_POLICIES,
  MAX_QUEUE_TICKET_MS,
} from './lockTerms';

export {
  ABSOLUTE_MAX_TTL_MS,
  DEFAULT_QUEUE_TICKET_MS,
  DENIAL_CODES,
  type DenialCode,
  denial,
  FAIRNESS_POLICIES,
  MAX_QUEUE_TICKET_MS,
  SESSION_QUEUE_TICKET_MS,
} from './lockTerms';

// Names are identifiers (see identifiers.ts): no control, bidi or invisible characters, no lone
// surrogates, no whitespace at either end.
const identifier = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .superRefine((name, ctx) => {
      const problem = identifierProblem(name);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

/** A lock key: 1 to 256 characters that are what they look like. */
export const lockKeySchema = identifier(256);

/**
 * A lock key as a request names it: a lock key that holds no credential (a connection string with a
 * password, a token). Records the service answers are read with lockKeySchema, so a key stored
 * before this check is still read.
 */
export const requestKeySchema = lockKeySchema.superRefine((key, ctx) => {
  const problem = keyCredentialLookalike(key);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** A holder id as a lease names it: 1 to 200 characters that are what they look like. */
export const holderSchema = identifier(200);

/** A requester id, unique per acquisition session: a holder id that does not look like a secret. */
export const requesterSchema = holderSchema.superRefine((name, ctx) => {
  const problem = credentialLookalike(name);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** The largest token any backend issues or any fenced resource stores: a signed 64-bit integer. */
export const MAX_FENCING_TOKEN = 9_223_372_036_854_775_807n;

/**
 * A fencing token as the lock service issued it: decimal digits (a string, so it survives
 * JavaScript's numbers), at most MAX_FENCING_TOKEN, which SQLite's and PostgreSQL's fenced resources
 * store as a 64-bit integer.
 */
export const fencingTokenSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,18}$/, 'must be a positive decimal integer')
  // The regex's verdict is reported on its own: only digits reach BigInt.
  .refine(
    (t) => !/^[0-9]+$/.test(t) || BigInt(t) <= MAX_FENCING_TOKEN,
    `must be at most ${MAX_FENCING_TOKEN}`,
  );

/** A lease TTL in milliseconds. */
export const ttlMsSchema = z
  .number({ error: 'must be a number of milliseconds' })
  .int('must be a whole number of milliseconds')
  .positive('must be greater than 0')
  .max(ABSOLUTE_MAX_TTL_MS, `must be at most ${ABSOLUTE_MAX_TTL_MS} ms`);

/** A granted lease. Times are milliseconds since the epoch on the lock service's clock. */
export const leaseSchema = z.strictObject({
  key: lockKeySchema,
  holder: holderSchema,
  token: fencingTokenSchema,
  leaseUntil: z.number().int(),
  grantedAt: z.number().int(),
});
export type Lease = z.infer<typeof leaseSchema>;

export const denialCodeSchema = z.enum(Object.keys(DENIAL_CODES) as [DenialCode, ...DenialCode[]]);

/** A refused acquisition, with what the service saw at that moment on its own clock. */
export const denialSchema = z.strictObject({
  code: denialCodeSchema,
  reason: z.string(),
  holder: holderSchema.nullable(),
  holderLeaseUntil: z.number().int().nullable(),
  /** Live waiters on the key other than the requester. */
  waiters: z.number().int().nonnegative(),
  /** The requester's 1-based place in the waiter queue, when it holds a ticket. */
  position: z.number().int().positive().nullable(),
  serviceTime: z.number().int(),
});
export type Denial = z.infer<typeof denialSchema>;

/** The answer of one fast-path attempt. */
export type AcquireAttempt = { granted: true; lease: Lease } | { granted: false; denial: Denial };

/** A live lease as listed by `holdings()`, for the wait-for graph. */
export interface Holding {
  key: string;
  holder: string;
  token: string;
  leaseUntil: number;
  /** The thread of control the lease is held for (see tryAcquire's `owner`); null: the holder alone. */
  owner: string | null;
}

/** A live queue ticket as listed by `waits()`, for the wait-for graph. */
export interface Wait {
  key: string;
  requester: string;
  position: number;
  /** The thread of control that waits (see tryAcquire's `owner`); null: the requester alone. */
  owner: string | null;
}

/** The answer of a fenced release or renewal: done, or why not. */
export type FencedActionResult =
  | { ok: true; serviceTime: number; leaseUntil?: number }
  | { ok: false; reason: 'not-holder' | 'stale-token' | 'expired'; serviceTime: number };

/** How a key's waiters are ordered (see FAIRNESS_POLICIES). */
export const fairnessSchema = z.enum(FAIRNESS_POLICIES);
export type Fairness = z.infer<typeof fairnessSchema>;

/** A request to the lock service's fast path. */
const tryAcquireRequestSchema = z.strictObject({
  key: requestKeySchema,
  requester: requesterSchema,
  ttlMs: ttlMsSchema,
  fairness: fairnessSchema.default('FIFO'),
  /** Used under priority-based fairness; higher goes first. */
  priority: z.number().int().min(0).max(1_000).default(0),
  /** How long the requester's place in the queue is kept after this call; each call renews it. */
  queueTicketMs: z.number().int().min(1_000).max(MAX_QUEUE_TICKET_MS).default(DEFAULT_QUEUE_TICKET_MS),
  /**
   * The thread of control that waits with this ticket and holds with this lease (a parent workflow,
   * a process that holds one key while it asks for another): the wait-for graph joins a holding and a
   * wait only when they have the same owner. Stored with the ticket and the lease; absent, the
   * request is its own owner and never makes an edge to anything else.
   */
  owner: holderSchema.optional(),
});
export type TryAcquireRequest = z.input<typeof tryAcquireRequestSchema>;
export type ParsedTryAcquireRequest = z.output<typeof tryAcquireRequestSchema>;

/** Names a lease by its key and holder: what a caller sends to release its own. */
export const leaseNamesSchema = z.strictObject({ key: lockKeySchema, holder: holderSchema });

/** Identifies one waiter on one key. */
export const waiterSchema = z.strictObject({ key: lockKeySchema, requester: holderSchema });
export type WaiterRef = z.infer<typeof waiterSchema>;

/** A fenced action's target: (key, holder, token) of a lease; nothing else but the lease's own times. */
const fencedTargetFields = z.strictObject({
  key: lockKeySchema,
  holder: holderSchema,
  token: fencingTokenSchema,
  // A lease may be passed as its own target: its times are allowed, checked and ignored.
  leaseUntil: z.number().int().optional(),
  grantedAt: z.number().int().optional(),
});
export const fencedTargetSchema = fencedTargetFields.transform(({ key, holder, token }) => ({
  key,
  holder,
  token,
}));
export type FencedTarget = z.output<typeof fencedTargetSchema>;

/**
 * An operator's force-release: the lease's (key, holder, token) and why it is taken away, required
 * of every caller (client, lockctl, a workflow started by hand).
 */
export const forceReleaseSchema = fencedTargetFields
  .extend({
    reason: z
      .string({ error: 'must say why the lease is taken away' })
      .trim()
      .min(1, 'must say why the lease is taken away')
      .max(500, 'must be at most 500 characters'),
  })
  .transform(({ key, holder, token, reason }) => ({ key, holder, token, reason }));
export type ForceRelease = z.output<typeof forceReleaseSchema>;

/** The fraction of a TTL `leasesRunningLow` looks below: more than nothing, at most the whole TTL. */
export const fractionLeftSchema = z.number().gt(0).max(1);

/** Parses `input` with `schema`, or throws an {@link InvalidLockRequestError} naming every bad field. */
export function parseOrThrow<T extends z.ZodType>(schema: T, input: unknown, what: string): z.infer<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw new InvalidLockRequestError(what, describeIssues(result.error));
  return result.data;
}

/**
 * Parses a tryAcquire request for a lock service whose longest lease is `maxTtlMs`; throws
 * InvalidLockRequest naming each bad field. Every backend parses through here before storing anything.
 */
export function parseTryAcquire(input: unknown, maxTtlMs: number): ParsedTryAcquireRequest {
  const request = parseOrThrow(tryAcquireRequestSchema, input, 'tryAcquire request');
  if (request.ttlMs > maxTtlMs) {
    throw new InvalidLockRequestError('tryAcquire request', [`ttlMs: must be at most ${maxTtlMs} ms`]);
  }
  return request;
}
