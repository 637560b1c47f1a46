// A session's phases, state and answers. Workflow code imports this module on every session's start,
// so it holds no zod schema (the SDK evaluates a workflow's modules for each workflow it loads, and
// zod's cost most: bench/workflowLoadCost.ts). The operator's answer is checked in operatorAnswer.ts.
import type { AppliedAs } from '../decisions/guardrails';
import type { Denial, FencedActionResult, Lease } from '../lockContract/lockSchemas';
import type { OperatorDecision } from '../decisions/operatorAnswer';
import { releaseKeyProblem } from '../lockContract/releaseKey';
import type { SessionPhase } from './sessionPhases';
import type { WaitForEdge } from '../lockContract/waitForGraph';

export type { OperatorDecision, OperatorDecisionInput } from '../decisions/operatorAnswer';

export { SESSION_PHASES, type SessionPhase } from './sessionPhases';

/** One decision as the session records it: who answered, what, and what the guardrails applied. */
export interface RecordedDecision {
  attempt: number;
  provider: string;
  decision: string;
  retryAfterMs: number | null;
  appliedMs: number | null;
  /**
   * What the session did with it: slept its own back-off; parked, the delay giving way to the park
   * (a release wakes it, `appliedMs` is only the timer's bound); escalated; or abandoned.
   */
  appliedAs: AppliedAs;
  fallbackCause: string | null;
  /** Made by a lab's single process that both keeps leases and holds the model key (never production). */
  labSingleProcess?: true;
}

/** Where a session stands, for the `state` query and the UI. */
export interface SessionState {
  phase: SessionPhase;
  key: string;
  requester: string;
  /** The owner it waits and holds for in the wait-for graph (see the request's `owner`); null: itself. */
  owner: string | null;
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
  /**
   * The request's constraints in no form the harness knows: given to the model as data, not
   * enforced (policy/decisions/constraints.ts). Absent in sessions from before they were accepted.
   */
  constraintsNotEnforced?: string[];
  /** Whom an escalation is for, as a constraint named it ("escalate to #payments-oncall"); null: the worker's on-call. */
  escalationContact?: string | null;
  /** Operator answers sent as a signal that failed validation: logged and ignored. */
  ignoredOperatorAnswers: number;
  /**
   * Other messages refused rather than acted on (a malformed payload, a release without the lease's
   * key, a claim the lock service did not bear out, a wake-up that changed nothing).
   */
  refusedMessages: number;
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
 * The `state` query's answer in a session's first moments, while its request is checked (one local
 * activity): there is no state yet, and the caller asks again. A value, not a query failure: a query
 * handler's failure reaches the client as text only.
 */
export interface RequestBeingChecked {
  status: 'checking-request';
}

/** What the `state` query answers: the session's state, or that its request is still being checked. */
export type StateAnswer = SessionState | RequestBeingChecked;

/** Whether a `state` answer is the session's state (not the moment before it has one). */
export function isSessionState(answer: StateAnswer): answer is SessionState {
  return !('status' in answer);
}

/**
 * The answer to `awaitLease`: the lease once held, how the session ended without one, or that the run
 * continued as new (the caller asks the next run: the session goes on there).
 */
export type LeaseAnswer =
  | { status: 'acquired'; lease: Lease }
  | { status: 'ended'; outcome: SessionOutcome }
  | { status: 'continued-as-new' };

/**
 * A session's lease answer, as `awaitLease` gives it and as a session started through withLock tells
 * its parent that it holds (a wake-up the parent proves at the lock service; the parent reads the
 * session's end from the child's result).
 */
export type SessionNews = Exclude<LeaseAnswer, { status: 'continued-as-new' }>;

/**
 * The answer to `releaseLease`: the lock service's fenced result, why there was nothing to release,
 * or that the run continued as new before it released (the caller asks the next run).
 */
export type ReleaseAnswer = FencedActionResult | { ok: false; reason: 'not-holding' | 'continued-as-new' };

/**
 * Who a caller acting on a session's lease says it is: the key and holder of the lease it means. The
 * release key (policy/lockContract/releaseKey.ts) goes beside it as the message's second argument, which sessions
 * of 0.1.0 (whose check of this object is strict) ignore: a name alone releases nothing since.
 */
export interface LeaseOwner {
  key: string;
  holder: string;
}

/**
 * Why a caller may not act on this session's lease (it names another key or holder, lacks the lease's
 * release key, or is not of the documented shape), or null when it may. Checked by hand rather than
 * with a zod schema: it runs in every release's update validator, inside the workflow (see above).
 */
export function leaseOwnerProblem(
  input: unknown,
  releaseKey: unknown,
  key: string,
  requester: string,
  lease: { releaseKeyDigest?: string },
): string | null {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    return '(input): must be an object { key, holder }';
  const fields = input as Record<string, unknown>;
  const problems = (['key', 'holder'] as const)
    .filter((name) => typeof fields[name] !== 'string')
    .map((name) => `${name}: must be a string`);
  const unknownFields = Object.keys(fields).filter((name) => name !== 'key' && name !== 'holder');
  if (unknownFields.length)
    problems.push(`(input): unknown field(s) ${unknownFields.slice(0, 5).join(', ')}`);
  if (problems.length) return problems.join('; ');
  const owner = fields as unknown as LeaseOwner;
  if (owner.key !== key || owner.holder !== requester)
    return `this session is ${JSON.stringify(requester)} on ${JSON.stringify(key)}, not ${quoted(owner.holder)} on ${quoted(owner.key)}`;
  return releaseKeyProblem(releaseKey, lease.releaseKeyDigest);
}

// A name from a message, shown in a refusal: quoted, and cut short (a message may be megabytes).
function quoted(name: string): string {
  return JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
}

/** A deadlock one session found, told to every other waiting session in the cycle. */
export interface DeadlockNotice {
  /** The cycle, readable (see describeCycle). */
  cycle: string;
  /** The one member (by owner: see WaitForEdge) that escalates the cycle; the others halt. */
  escalator: string;
  /** The cycle's edges in order; absent from a notice a 0.1.0 session sent. */
  edges?: WaitForEdge[];
}
