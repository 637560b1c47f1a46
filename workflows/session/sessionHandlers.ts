// A session's message handlers, registered before its request is checked.
import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../../policy/errors';
import {
  awaitLease,
  deadlockFound,
  fairnessViolated,
  lockReleased,
  releaseLease,
  requestRelease,
  resolveEscalation,
  resolveEscalationSignal,
  sessionState,
} from '../../temporal/messages';
import type { LockSession } from './lockSession';

/**
 * Where a session's message handlers find it. The updates and the state query are registered before
 * the session's request is checked, because the check is a local activity that ends the first
 * activation, and an update that came with the start (the client's awaitLease) finds no handler
 * otherwise and is refused. Until the session exists they wait for it; the signals are registered
 * with the session, and the SDK keeps any that come sooner until then.
 */
export class SessionSlot {
  private opened: LockSession | undefined;

  /** Puts the session in its slot and registers its signals (delivering any that were kept). */
  open(session: LockSession): LockSession {
    this.opened = session;
    installSignalHandlers(session);
    return session;
  }

  /** The session, once its request is checked. */
  get session(): LockSession | undefined {
    return this.opened;
  }

  /** Waits for the session: an update accepted before the request was checked. */
  async ready(): Promise<LockSession> {
    // Once open, no condition: each one costs the update's activation another pass into the sandbox.
    if (!this.opened) await condition(() => this.opened !== undefined);
    return this.opened!;
  }
}

/** Registers the updates and the state query of a session that is about to be opened in `slot`. */
export function installSessionHandlers(slot: SessionSlot): void {
  setHandler(sessionState, () => slot.session?.state ?? { status: 'checking-request' });
  // Validators run before an update is accepted: a refused one leaves no trace in the history, and
  // the caller (lockctl resolve, a client's release) is told why. Before the session exists, nothing
  // waits for an operator, and a release is accepted and answered once the session says what it holds.
  setHandler(resolveEscalation, async (answer) => (await slot.ready()).acceptOperatorAnswer(answer), {
    validator: (answer) => {
      if (!slot.session)
        throw ApplicationFailure.nonRetryable(
          'operator answer refused: the session is checking its request, not waiting for an operator',
          FAILURE_TYPES.invalidOperatorAnswer,
        );
      slot.session.refuseUnusableAnswer(answer);
    },
  });
  // Waiting updates never hold a run open: when the run continues as new they answer so, and the
  // caller asks the next run (the client follows the chain).
  setHandler(awaitLease, async () => (await slot.ready()).awaitLease());
  setHandler(releaseLease, async () => (await slot.ready()).releaseLease(), {
    validator: (owner, releaseKey) => slot.session?.refuseOtherOwner(owner, releaseKey),
  });
}

// Each handler is one call to the session.
function installSignalHandlers(session: LockSession): void {
  setHandler(lockReleased, (notice) => session.noteRelease(notice));
  setHandler(deadlockFound, (notice) => session.toldOfDeadlock(notice));
  setHandler(fairnessViolated, (overtaking) => session.toldOvertaken(overtaking));
  setHandler(requestRelease, (owner, releaseKey) => session.askRelease(owner, releaseKey));
  setHandler(resolveEscalationSignal, (answer) => session.operatorAnswerSignalled(answer));
}
