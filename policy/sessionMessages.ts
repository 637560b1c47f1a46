import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import type { AcquireOutcome } from './acquireRequest';
import type { FencedActionResult, Lease } from './lockSchemas';

/** Sent to a waiting session when the key it waits for is released: it retries at once. */
export const lockReleased = defineSignal('lockReleased');

/** An operator's answer to an escalation: retry with more budget, or abandon. */
export const operatorDecisionSchema = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('retry'),
    extraRetries: z.number().int().min(1).max(1_000).default(5),
    extraWaitMs: z
      .number()
      .int()
      .min(1_000)
      .max(24 * 60 * 60 * 1000)
      .default(60_000),
    operator: z.string().min(1).max(200),
    reason: z.string().min(1).max(1_000),
  }),
  z.strictObject({
    action: z.literal('abandon'),
    operator: z.string().min(1).max(200),
    reason: z.string().min(1).max(1_000),
  }),
]);
export type OperatorDecision = z.output<typeof operatorDecisionSchema>;
export type OperatorDecisionInput = z.input<typeof operatorDecisionSchema>;

/** The operator's answer to an escalated session (from the Temporal UI or `lockctl resolve`). */
export const resolveEscalation = defineSignal<[OperatorDecisionInput]>('resolveEscalation');

/** Asks a holding session to release its lease (fire and forget); see `releaseLease` to wait for it. */
export const requestRelease = defineSignal('requestRelease');

/** Releases the session's lease, fenced by its token, and answers with the lock service's result. */
export const releaseLease = defineUpdate<FencedActionResult | { ok: false; reason: 'not-holding' }>(
  'releaseLease',
);

/** Waits until the session holds the lease (answering it) or has ended without one (answering how). */
export const awaitLease = defineUpdate<LeaseAnswer>('awaitLease');
export type LeaseAnswer = { status: 'acquired'; lease: Lease } | { status: 'ended'; outcome: SessionOutcome };

/** Where a session stands, for the `state` query and the UI. */
export interface SessionState {
  phase:
    | 'acquiring'
    | 'backing-off'
    | 'escalated'
    | 'holding'
    | 'released'
    | 'lease-lost'
    | 'abandoned'
    | 'halted';
  key: string;
  requester: string;
  attempts: number;
  decisions: {
    attempt: number;
    provider: string;
    decision: string;
    retryAfterMs: number | null;
    appliedMs: number | null;
    fallbackCause: string | null;
  }[];
  /** The holder the last denial named (another session), or this session while it holds. */
  holder: string | null;
  lease: Lease | null;
  budgetLeft: { retries: number; waitMs: number };
  escalation: {
    reason: string;
    deadlock: boolean;
    flaggedForReview: boolean;
    resolution: OperatorDecision | 'timed-out' | null;
  } | null;
}

/** The session's current state. */
export const sessionState = defineQuery<SessionState>('state');

/** How a holding session ended, added to the acquisition outcomes. */
export type SessionOutcome =
  | AcquireOutcome
  | { status: 'released'; lease: Lease; attempts: number; heldMs: number }
  | { status: 'lease-lost'; lease: Lease; attempts: number; reason: string }
  | { status: 'halted'; attempts: number; reason: string };

/** Sent by a session started through withLock to its parent: (session workflow id, what happened). */
export const lockSessionUpdate = defineSignal<[string, LeaseAnswer]>('lockwarden.sessionUpdate');

/** A deadlock one session found, told to every other waiting session in the cycle. */
export interface DeadlockNotice {
  /** The cycle, readable: "alpha waits for b held by beta; beta waits for a held by alpha". */
  cycle: string;
  /** The one session (by requester) that escalates the cycle; the others halt. */
  escalator: string;
}
export const deadlockFound = defineSignal<[DeadlockNotice]>('deadlockFound');
