import { z } from 'zod';
import { describeIssues } from './errors';
import type { Denial, FencedActionResult, Lease } from './lockSchemas';
import type { WaitForEdge } from './waitForGraph';

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

/** The phases of a session, in its `state` query and its `LockState` search attribute. */
export const SESSION_PHASES = [
  'acquiring',
  'backing-off',
  'queued',
  'escalated',
  'holding',
  'released',
  'lease-lost',
  'abandoned',
  'halted',
] as const;
export type SessionPhase = (typeof SESSION_PHASES)[number];

/** One decision as the session records it: who answered, what, and what the guardrails applied. */
export interface RecordedDecision {
  attempt: number;
  provider: string;
  decision: string;
  retryAfterMs: number | null;
  appliedMs: number | null;
  fallbackCause: string | null;
}

/** Where a session stands, for the `state` query and the UI. */
export interface SessionState {
  phase: SessionPhase;
  key: string;
  requester: string;
  attempts: number;
  /** The last ten decisions, oldest first. */
  decisions: RecordedDecision[];
  /** The holder the last denial named (another session), or this session while it holds. */
  holder: string | null;
  lease: Lease | null;
  budgetLeft: { retries: number; waitMs: number };
  /** How long the session waited for the lease: as of its last attempt while it waits, in all once it holds. */
  waitedMs: number;
  /** When it began to wait (workflow clock, ms since the epoch, earlier runs included). */
  waitingSince: number;
  /** Its 1-based place in the key's queue at the last denial, or null (holding, or no ticket). */
  place: number | null;
  escalation: {
    reason: string;
    deadlock: boolean;
    flaggedForReview: boolean;
    /** The operator's answer; 'timed-out' without one; 'acquired' when a release ended it first. */
    resolution: OperatorDecision | 'timed-out' | 'acquired' | null;
  } | null;
  /** Operator answers sent as a signal that failed validation: logged and ignored. */
  ignoredOperatorAnswers: number;
}

/** How a session ended. */
export type SessionOutcome =
  | { status: 'released'; lease: Lease; attempts: number; heldMs: number }
  | { status: 'lease-lost'; lease: Lease; attempts: number; reason: string }
  | { status: 'abandoned'; attempts: number; waitedMs: number; lastDenial: Denial; reason: string }
  | { status: 'halted'; attempts: number; reason: string; deadlock: DeadlockFacts };

/** A deadlock as it is kept in a halted session's outcome: the cycle of waits and who escalated it. */
export interface DeadlockFacts {
  /** The cycle's edges in order (empty when a 0.1.0 session told of it, in words only). */
  cycle: WaitForEdge[];
  escalator: string;
}

/**
 * The answer to `awaitLease`: the lease once held, how the session ended without one, or that the run
 * continued as new (the caller asks the next run: the session goes on there).
 */
export type LeaseAnswer =
  | { status: 'acquired'; lease: Lease }
  | { status: 'ended'; outcome: SessionOutcome }
  | { status: 'continued-as-new' };

/** What a session started through withLock tells its parent: it holds the lease, or it ended. */
export type SessionNews = Exclude<LeaseAnswer, { status: 'continued-as-new' }>;

/**
 * The answer to `releaseLease`: the lock service's fenced result, why there was nothing to release,
 * or that the run continued as new before it released (the caller asks the next run).
 */
export type ReleaseAnswer = FencedActionResult | { ok: false; reason: 'not-holding' | 'continued-as-new' };

/** Who a caller acting on a session's lease says it is: the key and holder of the lease it means. */
export const leaseOwnerSchema = z.strictObject({ key: z.string(), holder: z.string() });
export type LeaseOwner = z.infer<typeof leaseOwnerSchema>;

/**
 * Why a caller may not act on this session's lease (it names another key or holder, or is not of
 * the documented shape), or null when it names this session's own.
 */
export function leaseOwnerProblem(input: unknown, key: string, requester: string): string | null {
  const parsed = leaseOwnerSchema.safeParse(input);
  if (!parsed.success) return describeIssues(parsed.error).join('; ');
  if (parsed.data.key !== key || parsed.data.holder !== requester)
    return `this session is ${JSON.stringify(requester)} on ${JSON.stringify(key)}, not ${JSON.stringify(parsed.data.holder)} on ${JSON.stringify(parsed.data.key)}`;
  return null;
}

/** A deadlock one session found, told to every other waiting session in the cycle. */
export interface DeadlockNotice {
  /** The cycle, readable (see describeCycle). */
  cycle: string;
  /** The one session (by requester) that escalates the cycle; the others halt. */
  escalator: string;
  /** The cycle's edges in order; absent from a notice a 0.1.0 session sent. */
  edges?: WaitForEdge[];
}

/** An operator's answer, checked against the session it is sent to: usable, or why not. */
export type OperatorAnswerCheck = { ok: true; answer: OperatorDecision } | { ok: false; problem: string };

/**
 * Checks an operator's answer before a session acts on it: only a session waiting for an operator
 * takes one, once, and only an answer of the documented shape.
 */
export function checkOperatorAnswer(
  input: unknown,
  phase: SessionPhase,
  alreadyAnswered: boolean,
): OperatorAnswerCheck {
  if (phase !== 'escalated')
    return { ok: false, problem: `the session is ${phase}, not waiting for an operator` };
  if (alreadyAnswered) return { ok: false, problem: 'the escalation has been answered already' };
  const parsed = operatorDecisionSchema.safeParse(input);
  if (!parsed.success) return { ok: false, problem: describeIssues(parsed.error).join('; ') };
  return { ok: true, answer: parsed.data };
}
