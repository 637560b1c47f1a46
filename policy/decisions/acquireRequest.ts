// A session's request and its budget: the zod schema every entry checks it with.
import { z } from 'zod';
import { LATENCY_FLOOR_MS } from '../constants';
import { readConstraints } from './constraints';
import { ABSOLUTE_MAX_HOLD_MS, ABSOLUTE_MAX_HOLDER_TTL_MS, MIN_HOLDER_TTL_MS } from './holdLimits';
import { RELEASE_KEY_DIGEST_PATTERN } from '../lockContract/releaseKey';
import {
  fairnessSchema,
  requesterSchema,
  requestKeySchema,
  parseOrThrow,
  ttlMsSchema,
} from '../lockContract/lockSchemas';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The hard retry budget of one session. It comes from reviewed configuration or the caller, never a model. */
export const retryBudgetSchema = z.strictObject({
  maxRetries: z.number().int().min(0).max(10_000).default(20),
  maxTotalWaitMs: z.number().int().positive().max(DAY_MS).default(60_000),
  maxBackoffMs: z.number().int().min(LATENCY_FLOOR_MS).max(DAY_MS).default(5_000),
  baseBackoffMs: z.number().int().min(LATENCY_FLOOR_MS).max(DAY_MS).default(100),
});
export type RetryBudget = z.infer<typeof retryBudgetSchema>;

/** What a caller asks for when it starts an acquisition session. */
export const acquireRequestSchema = z
  .strictObject({
    key: requestKeySchema,
    requester: requesterSchema,
    /**
     * The thread of control this session waits and holds for, in the wait-for graph: a parent
     * workflow (withLock sets its own id), or a process that holds one key while it asks for another.
     * Absent, the session is its own owner: it never holds while it waits, so it is never part of a
     * deadlock, however its requester name is reused on other keys.
     */
    owner: requesterSchema.optional(),
    ttlMs: ttlMsSchema.default(30_000),
    fairness: fairnessSchema.default('FIFO'),
    priority: z.number().int().min(0).max(1_000).default(0),
    /**
     * Operator rules in the forms of policy/decisions/constraints.ts ("at most 3 retries", "escalate after
     * 30s", "preserve FIFO ordering", "do not escalate before 5s"): enforced by the guardrails as hard
     * limits, the tightest of budget and constraints winning, and shown to the model as data.
     */
    constraints: z.array(z.string().max(300)).max(20).default([]),
    budget: retryBudgetSchema.prefault({}),
    /** How long an escalated session waits for the operator's answer before it abandons. */
    escalationTimeoutMs: z
      .number()
      .int()
      .min(1_000)
      .max(7 * DAY_MS)
      .default(15 * 60 * 1000),
    /**
     * The hold limit: held this long, the session lets go (fenced) and its holder learns the lease is
     * lost. Absent, the worker's default (policy/decisions/holdLimits.ts), never above its maximum.
     */
    maxHoldMs: z.number().int().min(1_000).max(ABSOLUTE_MAX_HOLD_MS).optional(),
    /**
     * Set for a holder outside a workflow (acquire() sets it): the holder sends keep-alives, and a
     * session that goes this long without one lets the lease go, fenced. Absent, the holder is durable
     * (a withLock parent, a detached session) and the hold ends with the session.
     */
    holderTtlMs: z.number().int().min(MIN_HOLDER_TTL_MS).max(ABSOLUTE_MAX_HOLDER_TTL_MS).optional(),
    /** Cut back-off short when the holder releases (a signal from the releasing session). */
    wakeOnRelease: z.boolean().default(true),
    /** Set by withLock: tell the parent workflow when the lease is granted and when the session ends. */
    notifyParent: z.boolean().default(false),
    /**
     * The SHA-256 (hex) of the release key the acquirer keeps (policy/lockContract/releaseKey.ts): the session
     * releases only for a caller who shows that key. The client and withLock set it; a session
     * started without one is released only by an operator's force-release.
     */
    releaseKeyDigest: z
      .string()
      .regex(RELEASE_KEY_DIGEST_PATTERN, 'must be 64 lowercase hex digits (the SHA-256 of a release key)')
      .optional(),
    /**
     * What a session's run hands its next run by continue-as-new, accepted only in a run its own
     * previous run continued (the session refuses it otherwise). A holding run (one whose history
     * messages grew past HOLD_HISTORY_EVENTS) hands over `holding`: its token only to compare, since
     * the next run reads the lease from the lock service and goes on holding only if the service still
     * shows that token for it; the hold limit's end and whether a release was asked for by signal.
     */
    resume: z
      .strictObject({
        attempts: z.number().int().nonnegative(),
        elapsedBeforeMs: z.number().int().nonnegative(),
        holding: z
          .strictObject({
            token: z.string().regex(/^[0-9]{1,19}$/),
            grantedAt: z.number().int().nonnegative(),
            heldSince: z.number().int().nonnegative(),
            limitAt: z.number().int().nonnegative(),
            releaseRequested: z.boolean(),
          })
          .optional(),
      })
      .optional(),
  })
  .refine((r) => r.budget.baseBackoffMs <= r.budget.maxBackoffMs, {
    path: ['budget', 'baseBackoffMs'],
    message: 'must not exceed budget.maxBackoffMs',
  })
  .superRefine((r, ctx) => {
    // A continued run keeps what its first run accepted: sessions from before the grammar carry on.
    if (r.resume) return;
    const read = readConstraints(r.constraints);
    if (!read.ok) {
      for (const { index, message } of read.problems)
        ctx.addIssue({
          code: 'custom',
          path: index === null ? ['constraints'] : ['constraints', index],
          message,
        });
      return;
    }
    if (read.rules.fifo && r.fairness !== 'FIFO')
      ctx.addIssue({
        code: 'custom',
        path: ['fairness'],
        message: `is ${r.fairness}, but a constraint says "preserve FIFO ordering"`,
      });
  });
export type AcquireRequestInput = z.input<typeof acquireRequestSchema>;
export type AcquireRequest = z.output<typeof acquireRequestSchema>;

/** A request as its session runs it, checked at the edge: its hold limit is always set. */
export type SessionRequest = AcquireRequest & { maxHoldMs: number };

/** Validates a caller's request, filling in the default TTL and budget; throws InvalidLockRequest. */
export function parseAcquireRequest(input: unknown): AcquireRequest {
  return parseOrThrow(acquireRequestSchema, input, 'acquisition request');
}

/** Which hard limit of the budget ended the session. */
export type BudgetLimit = 'max-retries' | 'max-total-wait';
