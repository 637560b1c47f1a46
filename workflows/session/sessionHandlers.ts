import { ApplicationFailure, condition, log, setHandler } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../../policy/errors';
import {
  checkOperatorAnswer,
  type LeaseAnswer,
  leaseOwnerProblem,
  type ReleaseAnswer,
} from '../../policy/session';
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

/** Registers every message a session answers; each handler only records what it was told. */
export function installSessionHandlers(session: LockSession): void {
  setHandler(sessionState, () => session.state);
  setHandler(lockReleased, (notice) => {
    if (!session.request.wakeOnRelease) return;
    session.woken = true;
    if (typeof notice?.releasedAt === 'number') session.releasedAt = notice.releasedAt;
  });
  setHandler(deadlockFound, (notice) => {
    session.deadlockNotice ??= notice;
    session.woken = true;
  });
  const ownerProblem = (owner: unknown) => leaseOwnerProblem(owner, session.key, session.requester);
  setHandler(requestRelease, (owner) => {
    const problem = ownerProblem(owner);
    if (problem) {
      log.warn('ignored a release request meant for another session', { problem });
      return;
    }
    session.releaseRequested = true;
  });

  const checkAnswer = (answer: unknown) =>
    checkOperatorAnswer(answer, session.state.phase, session.operatorAnswer !== undefined);
  setHandler(
    resolveEscalation,
    (answer) => {
      const checked = checkAnswer(answer);
      if (!checked.ok) throw new Error('unreachable: the validator admits only usable answers');
      session.operatorAnswer = checked.answer;
      return checked.answer;
    },
    {
      // Runs before the update is accepted: a refused answer leaves no trace in the history, and
      // the caller (lockctl resolve) is told why.
      validator: (answer) => {
        const checked = checkAnswer(answer);
        if (!checked.ok)
          throw ApplicationFailure.nonRetryable(
            `operator answer refused: ${checked.problem}`,
            FAILURE_TYPES.invalidOperatorAnswer,
          );
      },
    },
  );
  setHandler(resolveEscalationSignal, (answer) => {
    const checked = checkAnswer(answer);
    if (checked.ok) {
      session.operatorAnswer = checked.answer;
      return;
    }
    session.state.ignoredOperatorAnswers++;
    log.warn('ignored an operator answer sent as a signal', { problem: checked.problem });
  });

  // Waiting updates never hold a run open: when the run continues as new they answer so, and the
  // caller asks the next run (the client follows the chain).
  setHandler(awaitLease, async (): Promise<LeaseAnswer> => {
    await condition(
      () => session.state.phase === 'holding' || session.ended !== undefined || session.continuing,
    );
    if (session.ended) return { status: 'ended', outcome: session.ended };
    if (session.state.phase === 'holding') return { status: 'acquired', lease: session.state.lease! };
    return { status: 'continued-as-new' };
  });
  setHandler(
    releaseLease,
    async (): Promise<ReleaseAnswer> => {
      if (session.state.phase !== 'holding') return { ok: false, reason: 'not-holding' };
      session.releaseRequested = true;
      // A hold can also end on its own (the lease lost at a renewal): then there was nothing to release.
      await condition(
        () => session.releaseAnswer !== undefined || session.ended !== undefined || session.continuing,
      );
      if (session.releaseAnswer) return session.releaseAnswer;
      return { ok: false, reason: session.continuing ? 'continued-as-new' : 'not-holding' };
    },
    {
      // Only the lease's own key and holder may release it; any other caller is refused unaccepted.
      validator: (owner) => {
        const problem = ownerProblem(owner);
        if (problem)
          throw ApplicationFailure.nonRetryable(
            `release refused: ${problem}`,
            FAILURE_TYPES.leaseActionDenied,
          );
      },
    },
  );
}
