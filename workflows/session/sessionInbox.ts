// What a session is told: its message handlers' one-call targets, each checking what it is sent.
import { ApplicationFailure, condition, log } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../../policy/errors';
import type { Overtaking } from '../../policy/lockContract/fairness';
import { deadlockNoticeProblem, overtakingProblem } from '../../policy/sessionModel/noticeShapes';
import type { checkOperatorAnswer as CheckOperatorAnswer } from '../../policy/decisions/operatorAnswer';
import {
  type DeadlockNotice,
  type LeaseAnswer,
  leaseOwnerProblem,
  type OperatorDecision,
  type ReleaseAnswer,
} from '../../policy/sessionModel/sessionTypes';
import type { MessageRefusal } from '../../temporal/sinks';
import { sessionMetrics } from './metricsSink';
import { messageSpanContext } from './sessionTrace';
import { SessionRecord } from './sessionRecord';

/**
 * The session as its message handlers meet it: every signal and update lands in one method here,
 * which checks the payload (a malformed one is refused, logged and counted, never a failed workflow
 * task) and records what it may. The acquisition phase acts on it (LockSession).
 */
export class SessionInbox extends SessionRecord {
  // Each handler is one call.

  /** Notes a deadlock this session found or confirmed (the first one it learns of stands until settled). */
  noteDeadlock(notice: DeadlockNotice): void {
    this.deadlock ??= notice;
  }

  /**
   * A release freed the key: a session that waits on releases tries at once. The notice is only a
   * wake-up (what the key's state is, the next attempt reads); a payload of another shape is refused.
   */
  noteRelease(notice: unknown): void {
    if (notice !== undefined && notice !== null && (typeof notice !== 'object' || Array.isArray(notice)))
      return this.refused('lockReleased', 'bad-payload', '(input): must be absent or { releasedAt }');
    if (!this.request.wakeOnRelease) return;
    this.wokenByRelease = true;
    this.wokenBy = messageSpanContext();
    const releasedAt = (notice as { releasedAt?: unknown } | null | undefined)?.releasedAt;
    if (typeof releasedAt === 'number' && Number.isSafeInteger(releasedAt)) this.releasedAt = releasedAt;
  }

  /**
   * Another member of a wait-for cycle told this session of the deadlock: it acts on it at once. A
   * notice that is not of the documented shape is refused and changes nothing.
   */
  toldOfDeadlock(notice: unknown): void {
    const problem = deadlockNoticeProblem(notice);
    if (problem) return this.refused('deadlockFound', 'bad-payload', problem);
    // A notice is a claim: the session acts on it once the lock service's graph shows the cycle
    // (confirmDeadlockClaim).
    this.deadlockClaimed ??= notice as DeadlockNotice;
    this.wokenByRelease = true;
  }

  /** A deadlock notice another session sent, not yet checked against the lock service. */
  get deadlockClaim(): DeadlockNotice | undefined {
    return this.deadlockClaimed;
  }

  /** The claim was checked: confirmed (its cycle as the service shows it is noted) or refused. */
  deadlockClaimChecked(confirmed: DeadlockNotice | null): void {
    this.deadlockClaimed = undefined;
    if (confirmed) this.noteDeadlock(confirmed);
    else
      this.refused('deadlockFound', 'not-confirmed', 'the lock service shows no cycle through this session');
  }

  /**
   * The fairness monitor saw a later arrival put ahead of this waiter: it escalates at once. A notice
   * of another shape, or about another waiter or key, is refused and changes nothing.
   */
  toldOvertaken(overtaking: unknown): void {
    const problem = overtakingProblem(overtaking, this.key, this.requester);
    if (problem) return this.refused('fairnessViolated', 'bad-payload', problem);
    // A claim, checked on the lock service's queue (confirmOvertaking).
    this.overtakingClaimed ??= overtaking as Overtaking;
    this.wokenByRelease = true;
  }

  /** An overtaking notice not yet checked against the lock service. */
  get overtakingClaim(): Overtaking | undefined {
    return this.overtakingClaimed;
  }

  /** The claim was checked: confirmed (the waiter escalates) or refused. */
  overtakingClaimChecked(confirmed: boolean): void {
    const claim = this.overtakingClaimed;
    this.overtakingClaimed = undefined;
    if (confirmed && claim) this.overtaken ??= claim;
    else this.refused('fairnessViolated', 'not-confirmed', "the lock service's queue does not show it");
  }

  /**
   * The lease's owner (withLock) asks for the release with the lease's release key; a request without
   * it, or naming another lease, is refused (logged and counted).
   */
  askRelease(owner: unknown, releaseKey: unknown): void {
    const problem = this.ownerProblem(owner, releaseKey);
    if (problem) return this.refused('requestRelease', 'not-the-owner', problem);
    this.releaseAsked = this.releaseSignalled = true;
  }

  /**
   * A message this session will not act on: logged (the problem, never the payload), counted in its
   * state and in the worker's metrics. A signal has no sender to answer; this is its refusal.
   */
  refused(message: string, why: MessageRefusal, problem: string): void {
    this.current.refusedMessages++;
    log.warn('refused a message', { message, why, problem: problem.slice(0, 300) });
    sessionMetrics.messageRefused(message, why);
  }

  /** Refuses, before it is accepted, a release update that names another lease. */
  refuseOtherOwner(owner: unknown, releaseKey: unknown): void {
    const problem = this.ownerProblem(owner, releaseKey);
    if (problem)
      throw ApplicationFailure.nonRetryable(`release refused: ${problem}`, FAILURE_TYPES.leaseActionDenied);
  }

  /** Refuses, before it is accepted, an operator answer the session cannot use, and says why. */
  refuseUnusableAnswer(answer: unknown): void {
    const checked = this.checkAnswer(answer);
    if (!checked.ok)
      throw ApplicationFailure.nonRetryable(
        `operator answer refused: ${checked.problem}`,
        FAILURE_TYPES.invalidOperatorAnswer,
      );
  }

  /** Takes an operator's answer sent as an update (its validator already refused unusable ones). */
  acceptOperatorAnswer(answer: unknown): OperatorDecision {
    const checked = this.checkAnswer(answer);
    if (!checked.ok) throw new Error('unreachable: the validator admits only usable answers');
    this.operatorAnswer = checked.answer;
    return checked.answer;
  }

  /** Takes an operator's answer sent as a signal (the UI's Send Signal): an unusable one is counted and logged. */
  operatorAnswerSignalled(answer: unknown): void {
    const checked = this.checkAnswer(answer);
    if (checked.ok) {
      this.operatorAnswer = checked.answer;
      return;
    }
    this.current.ignoredOperatorAnswers++;
    log.warn('ignored an operator answer sent as a signal', { problem: checked.problem });
  }

  /** Answers once the session holds, has ended, or continues as new (the caller asks the next run). */
  async awaitLease(): Promise<LeaseAnswer> {
    await condition(() => this.current.phase === 'holding' || this.ended !== undefined || this.continuing);
    if (this.ended) return { status: 'ended', outcome: this.ended };
    if (this.current.phase === 'holding') return { status: 'acquired', lease: this.current.lease! };
    return { status: 'continued-as-new' };
  }

  /** Releases the held lease and answers with the lock service's fenced result. */
  async releaseLease(): Promise<ReleaseAnswer> {
    if (this.current.phase !== 'holding') return { ok: false, reason: 'not-holding' };
    // A run handing its hold over answers so: the caller asks the next run, which releases.
    if (this.continuing) return { ok: false, reason: 'continued-as-new' };
    this.releaseAsked = true;
    // A hold can also end on its own (the lease lost at a renewal): then there was nothing to release.
    await condition(() => this.releaseAnswer !== undefined || this.ended !== undefined || this.continuing);
    if (this.releaseAnswer) return this.releaseAnswer;
    return { ok: false, reason: this.continuing ? 'continued-as-new' : 'not-holding' };
  }

  protected ownerProblem(owner: unknown, releaseKey: unknown): string | null {
    // The digest comes with the start, in the memo (which only the starter sets), or, in a run
    // continued as new, in the request its previous run handed over.
    const releaseKeyDigest = this.releaseKeyDigest;
    return leaseOwnerProblem(owner, releaseKey, this.key, this.requester, {
      ...(releaseKeyDigest ? { releaseKeyDigest } : {}),
    });
  }

  protected checkAnswer(answer: unknown) {
    return loadOperatorAnswerCheck()(answer, this.current.phase, this.operatorAnswer !== undefined);
  }
}

/**
 * The operator-answer check, loaded when an answer arrives rather than when a session starts: its
 * zod schema is the one zod a session needs, and evaluating zod costs each workflow the worker loads
 * about 9 ms and 1 MiB (bench/workflowLoadCost.ts). The bundler keeps `require` synchronous, as a
 * validator must be.
 */
function loadOperatorAnswerCheck(): typeof CheckOperatorAnswer {
  const loaded =
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('../../policy/decisions/operatorAnswer') as typeof import('../../policy/decisions/operatorAnswer');
  return loaded.checkOperatorAnswer;
}
