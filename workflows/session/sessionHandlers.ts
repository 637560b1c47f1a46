import { setHandler } from '@temporalio/workflow';
import {
  awaitLease,
  deadlockFound,
  lockReleased,
  releaseLease,
  requestRelease,
  resolveEscalation,
  resolveEscalationSignal,
  sessionState,
} from '../../temporal/messages';
import type { LockSession } from './lockSession';

/** Registers every message a session answers; each handler is one call to the session. */
export function installSessionHandlers(session: LockSession): void {
  setHandler(sessionState, () => session.state);
  setHandler(lockReleased, (notice) => session.noteRelease(notice));
  setHandler(deadlockFound, (notice) => session.toldOfDeadlock(notice));
  setHandler(requestRelease, (owner) => session.askRelease(owner));
  // Validators run before an update is accepted: a refused one leaves no trace in the history, and
  // the caller (lockctl resolve, a client's release) is told why.
  setHandler(resolveEscalation, (answer) => session.acceptOperatorAnswer(answer), {
    validator: (answer) => session.refuseUnusableAnswer(answer),
  });
  setHandler(resolveEscalationSignal, (answer) => session.operatorAnswerSignalled(answer));
  // Waiting updates never hold a run open: when the run continues as new they answer so, and the
  // caller asks the next run (the client follows the chain).
  setHandler(awaitLease, () => session.awaitLease());
  setHandler(releaseLease, () => session.releaseLease(), {
    validator: (owner) => session.refuseOtherOwner(owner),
  });
}
