// What a withLock hears from its session: one signal handler for all of a workflow's withLocks.
import { ApplicationFailure, log, setHandler } from '@temporalio/workflow';
import type { SessionNews } from '../policy/sessionModel/sessionTypes';
import { lockSessionUpdate } from '../temporal/messages';

// Where each of this workflow's open withLocks collects what its session says: one signal handler
// for all, so withLocks can nest. Kept on globalThis, which the SDK keeps apart for each workflow
// (module scope may be shared by the workflows of one worker context).
interface Listening {
  __lockwardenSessionNews?: Map<string, SessionNews[]>;
}

/**
 * Collects in `answers` what the session `sessionId` says. Anyone may send this signal: a payload
 * that is not an object is refused here, and what is kept is a claim withLock proves before use.
 */
export function listenTo(sessionId: string, answers: SessionNews[]): void {
  const scope = globalThis as Listening;
  const listening = (scope.__lockwardenSessionNews ??= new Map());
  listening.set(sessionId, answers);
  setHandler(lockSessionUpdate, (from: unknown, answer: unknown) => {
    const kept = typeof from === 'string' ? listening.get(from) : undefined;
    if (!kept) return;
    if (typeof answer !== 'object' || answer === null || typeof (answer as SessionNews).status !== 'string') {
      log.warn('refused a session notice that is not of its shape', { from });
      return;
    }
    kept.push(answer as SessionNews);
  });
}

/** Stops collecting for `sessionId` (its withLock is over). */
export function forget(sessionId: string): void {
  (globalThis as Listening).__lockwardenSessionNews?.delete(sessionId);
}

/** The failure Temporal answers a signal to a workflow that has already closed. */
export function endedBeforeSignal(error: unknown): boolean {
  return error instanceof ApplicationFailure && error.type === 'ExternalWorkflowExecutionNotFound';
}
