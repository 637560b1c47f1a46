// The acquisition phase's calls at the key's queue, and the only workflow code that asks the lock
// service for a lease: the fast path (the first attempt riding in the request's check), and leaving
// the queue. The phase (acquirePhase.ts) decides when each is made and counts every attempt.
import { ActivityFailure, ApplicationFailure, log, workflowInfo } from '@temporalio/workflow';
import type { SessionAttempt } from '../../activities/lockActivities';
import type { CheckedRequest } from '../../activities/requestActivities';
import { fastPathRequest } from '../../policy/decisions/firstAttempt';
import { denial } from '../../policy/lockContract/lockTerms';
import { credentialsRefusal, handoffCalls, lockCalls, lockServiceUnreachable } from '../lockCalls';
import type { LockSession } from './lockSession';
import { sessionMetrics } from './metricsSink';
import { inSpan } from '../../temporal/spans';
import { sessionAttributes } from './sessionTrace';

/** The session's checked request, and the answer to its first attempt when the check made it. */
interface CheckedStart {
  request: CheckedRequest;
  firstAttempt: SessionAttempt | null;
}

/**
 * The session's request, checked and with its defaults filled in, or a non-retryable
 * InvalidLockRequest failure that names each bad field (the session then fails before any lock call).
 * The check runs in a local activity, in the first workflow task, and a fresh session's first
 * fast-path attempt rides in the same call: one local activity instead of two in a row, each an
 * activation's round trip. The acquisition phase counts that attempt (acquireUntilHeld). A run
 * continued as new tries from its own state, after the check.
 */
export async function checkRequestAndTryFirst(input: unknown): Promise<CheckedStart> {
  if (continuesARun(input)) return { request: await checkOnly(input), firstAttempt: null };
  try {
    // The request's names are known once it is checked: the span names the session meanwhile.
    const first = { 'lockwarden.session_id': workflowInfo().workflowId, 'lockwarden.attempt': 1 };
    const checked = await inSpan(
      'lockwarden.attempt',
      { ...first, 'lockwarden.why': 'fast path' },
      async (span) => {
        const answer = await typedFailure(() =>
          handoffCalls.checkRequestAndTryAcquire.executeWithOptions(
            { summary: 'check the request, fast path, attempt 1' },
            [input],
          ),
        );
        if (typeof answer?.request !== 'object') throw new Error(ANOTHER_VERSIONS_RUN);
        const { attempt } = answer;
        span.setAttributes({
          ...sessionAttributes(answer.request),
          'lockwarden.outcome': attempt.granted ? 'granted' : attempt.denial.code,
        });
        return answer;
      },
    );
    return { request: checked.request, firstAttempt: checked.attempt };
  } catch (error) {
    const refused = credentialsRefusal(error);
    if (refused === null && !lockServiceUnreachable(error)) throw error;
    // The request may be fine and the service down, or refusing the worker: checked alone, the
    // attempt is the denial a fast path meeting the same answers with.
    const attempt = refused === null ? unreachableDenial() : credentialsRefusedDenial(refused);
    return { request: await checkOnly(input), firstAttempt: attempt };
  }
}

/**
 * Replaying a history whose first local activity answered something else: a session another version
 * started (0.1.0 parsed its request in the workflow and then tried the fast path). Thrown as a plain
 * error, it fails the workflow task, which Temporal retries: the session waits, unchanged, for a
 * worker of its own version, and the UI says why.
 */
const ANOTHER_VERSIONS_RUN =
  'this session was started by another lockwarden version (0.1.0?): run it to its end on a worker of that version (docs/versioning.md)';

function checkOnly(input: unknown): Promise<CheckedRequest> {
  return typedFailure(() =>
    handoffCalls.checkAcquireRequest.executeWithOptions({ summary: 'check the request' }, [input]),
  );
}

// The session fails with the check's own typed failure (InvalidLockRequest), not an activity failure.
async function typedFailure<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) throw cause;
    throw error;
  }
}

// A continued run's input carries what it resumes; the check refuses it if that is malformed.
function continuesARun(input: unknown): boolean {
  return typeof input === 'object' && input !== null && (input as { resume?: unknown }).resume !== undefined;
}

/**
 * One attempt at the lock service's fast path for this session's request, counted in its state. The
 * lease, if granted, and its token come only from the lock service's answer to this call. A grant
 * that follows a release's wake-up is a hand-off, measured on the lock service's clock.
 */
export async function tryFastPath(session: LockSession, why: string): Promise<SessionAttempt> {
  const attempts = session.beginAttempt();
  // The wait-for graph is read when the situation may have changed: at the first denial, or when the
  // key's holder is not the one last seen. A cycle forms only when someone starts waiting or a key
  // changes hands, and whoever closes it sees it then.
  const seen = session.lastDenial ? { holder: session.lastDenial.holder } : undefined;
  return inSpan('lockwarden.attempt', attemptAttributes(session, attempts, why), async (span) => {
    let attempt: SessionAttempt;
    try {
      attempt = await handoffCalls.tryAcquireLock.executeWithOptions(
        { summary: `${why}, attempt ${attempts}` },
        [fastPathRequest(session.request, session.ticketSpanMs()), seen],
      );
    } catch (error) {
      const refused = credentialsRefusal(error);
      if (refused !== null) attempt = credentialsRefusedDenial(refused);
      else if (lockServiceUnreachable(error)) attempt = unreachableDenial();
      else throw error;
    }
    span.setAttribute('lockwarden.outcome', attempt.granted ? 'granted' : attempt.denial.code);
    return noteAttempt(session, attempt);
  });
}

// What an attempt's span says of it: the session, its number, why it is made.
function attemptAttributes(session: LockSession, attempt: number, why: string) {
  return { ...sessionAttributes(session), 'lockwarden.attempt': attempt, 'lockwarden.why': why };
}

/**
 * The service is down: a denial like any other (no holder known, no place), so the session backs off
 * under its budget and tries again, rather than failing while the service restarts.
 */
function unreachableDenial(): SessionAttempt {
  const seen = { holder: null, holderLeaseUntil: null, waiters: 0, position: null, serviceTime: Date.now() };
  return { granted: false, denial: denial('UNAVAILABLE', seen) };
}
/**
 * The service refused the worker's credentials or permissions: not contention, so no decision is
 * asked; the acquisition phase escalates it at once (a human must fix it). The reason carries the
 * service's own words, redacted by the activity.
 */
function credentialsRefusedDenial(detail: string): SessionAttempt {
  const seen = { holder: null, holderLeaseUntil: null, waiters: 0, position: null, serviceTime: Date.now() };
  const refused = denial('CREDENTIALS_REFUSED', seen);
  return { granted: false, denial: { ...refused, reason: `${refused.reason} (${detail})` } };
}

/** Counts an attempt's answer in the session's state (a hand-off, when a release's wake-up led to it). */
export function noteAttempt(session: LockSession, attempt: SessionAttempt): SessionAttempt {
  const handoffMs = session.noteAttempt(attempt);
  if (handoffMs !== undefined) sessionMetrics.handedOff(handoffMs);
  return attempt;
}

/** Gives up the session's place in the key's queue, so a session that stops waiting blocks no one. */
export async function leaveQueue(session: LockSession, why: string): Promise<void> {
  try {
    await lockCalls.leaveQueue.executeWithOptions({ summary: `leave the queue: ${why}` }, [
      { key: session.key, requester: session.requester },
    ]);
  } catch (error) {
    if (!lockServiceUnreachable(error)) throw error;
    // Unreachable now: the place lapses on its own when its ticket does, and blocks no one for long.
    log.warn('could not leave the queue: the lock service was unreachable', { key: session.key });
  }
}
