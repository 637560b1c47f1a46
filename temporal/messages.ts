// The messages a session answers: what callers, the Temporal UI and other sessions send it. Clients
// and activities import these definitions as the workflows do, so the names are written once.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Overtaking } from '../policy/lockContract/fairness';
import type {
  DeadlockNotice,
  LeaseAnswer,
  LeaseOwner,
  OperatorDecision,
  SessionNews,
  OperatorDecisionInput,
  ReleaseAnswer,
  StateAnswer,
} from '../policy/sessionModel/sessionTypes';

/**
 * Sent to a waiting session when the key it waits for is released: it retries at once. The release's
 * time on the lock service's clock, when a release sent it, measures the hand-off.
 */
export const lockReleased = defineSignal<[ReleaseNotice?]>('lockReleased');

/** What a release tells the waiter it wakes. */
export interface ReleaseNotice {
  /** When the lock service released the key, on its own clock. */
  releasedAt: number;
}

/**
 * Asks a holding session to release its lease (fire and forget); see `releaseLease` to wait for it.
 * Names the lease's key and holder, with the release key its acquirer was given as the second argument:
 * a session refuses (logs and counts) a request meant for another lease or without the key.
 */
export const requestRelease = defineSignal<[LeaseOwner, string | undefined]>('requestRelease');

/**
 * Releases the session's lease, fenced by its token, and answers with the lock service's result. Names
 * the lease's key and holder, with the release key as the second argument: a session refuses a
 * request meant for another lease, or without the key, before accepting it.
 */
export const releaseLease = defineUpdate<ReleaseAnswer, [LeaseOwner, string | undefined]>('releaseLease');

/** Waits until the session holds the lease (answering it) or has ended without one (answering how). */
export const awaitLease = defineUpdate<LeaseAnswer>('awaitLease');

/**
 * The operator's answer to an escalated session, as an update: a bad answer, or one sent to a session
 * that is not waiting for an operator, is refused by the validator and the caller is told why.
 */
export const resolveEscalation = defineUpdate<OperatorDecision, [OperatorDecisionInput]>('resolveEscalation');

/**
 * The same answer as a signal, for the Temporal UI's Send Signal: validated the same way, and an
 * invalid one is logged and counted in the state (a signal has no one to answer).
 */
export const resolveEscalationSignal = defineSignal<[OperatorDecisionInput]>('resolveEscalation');

/** The session's current state. */
export const sessionState = defineQuery<StateAnswer>('state');

/** Sent by a session started through withLock to its parent: (session workflow id, what happened). */
export const lockSessionUpdate = defineSignal<[string, SessionNews]>('lockwarden.sessionUpdate');

/** Tells a waiting session of a deadlock it is part of. */
export const deadlockFound = defineSignal<[DeadlockNotice]>('deadlockFound');

/**
 * Tells a waiting session that a later arrival stands ahead of it in the key's queue (seen on the
 * lock service's clock when the key changed hands): it escalates with reason fairness-violation.
 */
export const fairnessViolated = defineSignal<[Overtaking]>('fairnessViolated');
