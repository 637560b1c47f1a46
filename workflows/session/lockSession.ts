import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SessionAttempt } from '../../activities/lockActivities';
import type { AcquireRequest, RetryBudget } from '../../policy/acquireRequest';
import {
  type ConstraintRules,
  constraintRules,
  NO_CONSTRAINTS,
  tightenBudget,
} from '../../policy/constraints';
import type { PastDecision } from '../../policy/decisionContext';
import { FAILURE_TYPES } from '../../policy/errors';
import { appliedAs, type GuardedStep, type RetryProgress } from '../../policy/guardrails';
import type { Overtaking } from '../../policy/fairness';
import type { Denial, Lease } from '../../policy/lockSchemas';
import type { DecisionRecord } from '../../policy/retryDecision';
import type { checkOperatorAnswer as CheckOperatorAnswer } from '../../policy/operatorAnswer';
import {
  type DeadlockNotice,
  type LeaseAnswer,
  leaseOwnerProblem,
  type OperatorDecision,
  type ReleaseAnswer,
  type SessionOutcome,
  type SessionPhase,
  type SessionState,
} from '../../policy/session';
import { SESSION_QUEUE_TICKET_MS } from '../../policy/lockTerms';
import {
  needsDecision,
  nothingMoved,
  situationOf,
  ticketSpanMs,
  type WaitSituation,
  wakeChangedNothing,
} from '../../policy/waiting';
import type { SessionPaths } from './sessionPaths';
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes';
import { tellParent } from './peerSignals';
import { deadlockNoticeProblem, overtakingProblem } from '../../policy/noticeShapes';
import { RELEASE_KEY_MEMO } from '../../policy/releaseKey';
import { sessionMetrics } from './metricsSink';
import type { MessageRefusal } from '../../temporal/sinks';

/**
 * Where a session asks for retry decisions: the model worker's task queue; or the policy, in a local
 * activity (`byPolicy`: the worker that checked the request has no model); else the decision
 * activity on the session's own queue.
 */
export interface DecisionRoute {
  modelTaskQueue: string | null;
  byPolicy: boolean;
}

/** What carries over to the next run when a session continues as new. */
export type Resume = NonNullable<AcquireRequest['resume']>;

/** How a phase ends the run: with the session's outcome, or by continuing as new. */
export type PhaseEnd = { kind: 'ended'; outcome: SessionOutcome } | { kind: 'continued'; resume: Resume };

/** Why a session escalates. */
export type Escalation = NonNullable<SessionState['escalation']>;

/**
 * One acquisition session's state, and the only code that changes it. Message handlers and phases
 * call its methods, each the one place where its change happens; `enter` keeps the state query, the
 * `LockState` search attribute and the UI's current details in step.
 */
export class LockSession {
  private readonly current: SessionState;
  /** The budget in force: the caller's within its constraints, plus whatever an operator granted. */
  private grantedBudget: RetryBudget;
  /** The request's constraints, as the guardrails enforce them (none for runs before HARNESS_RULES_OF_000). */
  readonly constraints: ConstraintRules;
  private denial: Denial | undefined;
  private readonly pastDecisions: PastDecision[] = [];
  private lastBackoffMs: number;
  private escalationCount = 0;

  private wokenByRelease = false;
  /** The last wait ended by a wake-up rather than its timer (see noteSituation). */
  private wokenEarly = false;
  /** When the release that woke this session freed the key (lock service clock), to time the hand-off. */
  private releasedAt: number | undefined;
  private releaseAsked = false;
  private operatorAnswer: OperatorDecision | undefined;
  private deadlock: DeadlockNotice | undefined;
  private deadlockClaimed: DeadlockNotice | undefined;
  private overtaken: Overtaking | undefined;
  private overtakingClaimed: Overtaking | undefined;
  private releaseAnswer: ReleaseAnswer | undefined;
  private ended: SessionOutcome | undefined;
  /** Set when this run continues as new: waiting updates answer so, and the caller asks the next run. */
  private continuing = false;

  /** What the last denial showed, to tell whether a new decision is needed; null asks for one. */
  private situation: WaitSituation | null = null;
  /** Denials in a row in which nothing moved (rule 4 counts these, not attempts). */
  private unchanged = 0;

  /** Workflow time (the SDK's replayed clock) at which waiting began, earlier runs included. */
  private readonly waitingSince: number;
  /** Workflow time at which the hold began, earlier runs included. */
  private heldSince = 0;

  constructor(
    readonly request: AcquireRequest,
    /** The patched paths this run takes, decided at its start (sessionPaths). */
    readonly paths: SessionPaths,
    /** Where decisions are asked for, as the worker that checked the request said. */
    readonly decisions: DecisionRoute = { modelTaskQueue: null, byPolicy: false },
  ) {
    this.constraints = paths.harnessRules ? constraintRules(request.constraints) : NO_CONSTRAINTS;
    this.grantedBudget = tightenBudget(request.budget, this.constraints);
    this.lastBackoffMs = request.budget.baseBackoffMs;
    this.waitingSince = Date.now() - (request.resume?.elapsedBeforeMs ?? 0);
    this.current = {
      phase: 'acquiring',
      key: request.key,
      requester: request.requester,
      owner: request.owner ?? null,
      attempts: request.resume?.attempts ?? 0,
      decisions: [],
      holder: null,
      lease: request.resume?.lease ?? null,
      budgetLeft: { retries: this.grantedBudget.maxRetries, waitMs: this.grantedBudget.maxTotalWaitMs },
      waitedMs: request.resume?.elapsedBeforeMs ?? 0,
      waitingSince: this.waitingSince,
      place: null,
      escalation: null,
      ignoredOperatorAnswers: 0,
      refusedMessages: 0,
    };
    // A session started by the client carries these already; a child started by withLock does not.
    const shown = workflowInfo().typedSearchAttributes;
    const names = [
      { key: SEARCH_ATTRIBUTES.lockKey, value: request.key },
      { key: SEARCH_ATTRIBUTES.lockRequester, value: request.requester },
    ].filter(({ key, value }) => shown.get(key) !== value);
    if (names.length) upsertSearchAttributes(names);
  }

  /** The digest of this lease's release key (see policy/releaseKey.ts), if the session has one. */
  get releaseKeyDigest(): string | undefined {
    const memo = workflowInfo().memo?.[RELEASE_KEY_MEMO];
    return this.request.releaseKeyDigest ?? (typeof memo === 'string' ? memo : undefined);
  }

  // ---- What the phases read ----

  get key(): string {
    return this.request.key;
  }

  get requester(): string {
    return this.request.requester;
  }

  /**
   * Who this session is in the wait-for graph: its owner. A session without one is its own, and
   * sessions recorded before owners existed were their requester.
   */
  get graphNode(): string {
    return this.request.owner ?? this.request.requester;
  }

  /** Where the session stands, as the `state` query shows it. */
  get state(): Readonly<SessionState> {
    return this.current;
  }

  get attempts(): number {
    return this.current.attempts;
  }

  get budget(): RetryBudget {
    return this.grantedBudget;
  }

  /** The last denial, for the decision and for the outcome of a session that gives up. */
  get lastDenial(): Denial | undefined {
    return this.denial;
  }

  /** Decisions so far, as the next decision sees them. */
  get recentDecisions(): readonly PastDecision[] {
    return this.pastDecisions;
  }

  get previousBackoffMs(): number {
    return this.lastBackoffMs;
  }

  get unchangedDenials(): number {
    return this.unchanged;
  }

  /** A release (or a deadlock notice) came since the last attempt began. */
  get woken(): boolean {
    return this.wokenByRelease;
  }

  get releaseRequested(): boolean {
    return this.releaseAsked;
  }

  get operatorAnswered(): boolean {
    return this.operatorAnswer !== undefined;
  }

  /** The deadlock this session found or was told of, until it is settled. */
  get deadlockNotice(): DeadlockNotice | undefined {
    return this.deadlock;
  }

  /** The lease a continued run took over, still held; null for a run that must acquire. */
  get resumedLease(): Lease | null {
    return this.request.resume?.lease ?? null;
  }

  /**
   * Whether this run parks until told (PARK_UNTIL_TOLD) or watches the lease end and refreshes its
   * ticket, as runs before it did.
   */
  get parksUntilTold(): boolean {
    return this.paths.parksUntilTold;
  }

  /**
   * The span its queue ticket is asked to live at this attempt: the session's whole wait from here
   * (ticketSpanMs), or, for a run that refreshes its ticket, the fixed session ticket.
   */
  ticketSpanMs(): number {
    if (!this.parksUntilTold) return SESSION_QUEUE_TICKET_MS;
    return ticketSpanMs(
      this.grantedBudget.maxTotalWaitMs - this.waitedMs(),
      this.request.escalationTimeoutMs,
    );
  }

  /** Time spent waiting so far, in workflow time. */
  waitedMs(): number {
    return Date.now() - this.waitingSince;
  }

  /** Time the lease has been held so far, in workflow time. */
  heldMs(): number {
    return Date.now() - this.heldSince;
  }

  /** Moves the session to `phase`: its state, its `LockState` search attribute and the UI's details. */
  enter(phase: SessionPhase, details: string): void {
    this.current.phase = phase;
    // Each upsert is a visibility write on the server: none when the state shown is already this one.
    if (workflowInfo().typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockState) !== phase)
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockState, value: phase }]);
    setCurrentDetails(details);
  }

  // ---- What the message handlers are told (each handler is one call) ----

  /**
   * A release freed the key: a session that waits on releases tries at once. The notice is only a
   * wake-up (what the key's state is, the next attempt reads); a payload of another shape is refused.
   */
  noteRelease(notice: unknown): void {
    if (notice !== undefined && notice !== null && (typeof notice !== 'object' || Array.isArray(notice)))
      return this.refused('lockReleased', 'bad-payload', '(input): must be absent or { releasedAt }');
    if (!this.request.wakeOnRelease) return;
    this.wokenByRelease = true;
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
    // A notice is a claim: a current run acts on it once the lock service's graph shows the cycle
    // (confirmDeadlockClaim); runs from before that (0.1.0) believed it.
    if (this.paths.leanWorkflowTasks) this.deadlockClaimed ??= notice as DeadlockNotice;
    else this.noteDeadlock(notice as DeadlockNotice);
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
    // A claim, checked on the lock service's queue (confirmOvertaking) by current runs.
    if (this.paths.leanWorkflowTasks) this.overtakingClaimed ??= overtaking as Overtaking;
    else this.overtaken ??= overtaking as Overtaking;
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
    this.releaseAsked = true;
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
    this.releaseAsked = true;
    // A hold can also end on its own (the lease lost at a renewal): then there was nothing to release.
    await condition(() => this.releaseAnswer !== undefined || this.ended !== undefined || this.continuing);
    if (this.releaseAnswer) return this.releaseAnswer;
    return { ok: false, reason: this.continuing ? 'continued-as-new' : 'not-holding' };
  }

  // ---- What the acquisition phase records ----

  /** Counts a fast-path attempt about to be made; a wake-up from here on ends the next wait. */
  beginAttempt(): number {
    this.wokenByRelease = false;
    return ++this.current.attempts;
  }

  /**
   * Records the lock service's answer to an attempt. Returns how long a grant took after the release
   * that woke this session (on the lock service's clock), when it is such a hand-off.
   */
  noteAttempt(attempt: SessionAttempt): number | undefined {
    this.current.waitedMs = this.waitedMs();
    const releasedAt = this.releasedAt;
    if (attempt.granted) {
      this.releasedAt = undefined;
      this.current.place = null;
      const { grantedAt } = attempt.lease;
      return releasedAt !== undefined && grantedAt >= releasedAt ? grantedAt - releasedAt : undefined;
    }
    // A release that woke us during this call still counts for the next try; an older one does not.
    if (!this.wokenByRelease) this.releasedAt = undefined;
    this.denial = attempt.denial;
    this.current.place = attempt.denial.position;
    this.current.holder = attempt.denial.holder;
    return undefined;
  }

  /** The wait before the next attempt ended: cut short by a wake-up (true), or at its timer. */
  waitEnded(byWakeUp: boolean): void {
    this.wokenEarly = byWakeUp;
  }

  /**
   * Notes what a denial shows (for rule 4's count); returns whether it calls for a new decision. An
   * attempt a wake-up led to that found nothing changed is not counted: a release notice is a claim,
   * and twenty-five of them must not spend twenty-five retries.
   */
  noteSituation(denial: Denial, parks: boolean): boolean {
    const seen = situationOf(denial);
    if (this.wokenEarly && this.paths.leanWorkflowTasks && wakeChangedNothing(this.situation, seen)) {
      this.current.attempts--;
      this.refused('lockReleased', 'nothing-changed', `woken while ${seen.holder} still holds`);
    }
    this.wokenEarly = false;
    this.unchanged = nothingMoved(this.situation, seen) ? this.unchanged + 1 : 1;
    // Only a parked waiter goes without a decision: one that backs off needs a delay each time.
    const ask = !parks || needsDecision(this.situation, seen);
    this.situation = seen;
    return ask;
  }

  /** Forgets the situation last seen, so the next denial asks for a decision. */
  decideAfresh(): void {
    this.situation = null;
  }

  /**
   * Records a decision, what the guardrails made of it, and the budget left after it. `parked`: the
   * decision's delay gave way to the park (a release wakes the waiter; the timer is only its bound).
   */
  recordDecision(
    record: DecisionRecord,
    step: GuardedStep,
    denial: Denial,
    progress: RetryProgress,
    parked = false,
  ): void {
    const { decision } = record;
    this.pastDecisions.push({
      decision: decision.decision,
      retryAfterMs: decision.retry_after_ms ?? null,
      failureReason: denial.reason,
    });
    // The state keeps the last ten, for the query and the UI.
    const recorded = {
      attempt: progress.attempts,
      provider: record.provider,
      decision: decision.decision,
      retryAfterMs: decision.retry_after_ms ?? null,
      appliedMs: step.kind === 'sleep' ? step.sleepMs : null,
      ...(this.paths.harnessRules ? { appliedAs: appliedAs(step, parked) } : {}),
      fallbackCause: record.fallbackCause,
    };
    this.current.decisions = [...this.current.decisions.slice(-9), recorded];
    this.current.budgetLeft = {
      retries: Math.max(0, this.grantedBudget.maxRetries - (progress.attempts - 1)),
      waitMs: Math.max(0, this.grantedBudget.maxTotalWaitMs - progress.elapsedMs),
    };
  }

  /** The back-off just applied, which the next decision's policy grows from. */
  noteBackoff(sleepMs: number): void {
    this.lastBackoffMs = sleepMs;
  }

  /** Notes a deadlock this session found (the first one it learns of stands until settled). */
  noteDeadlock(notice: DeadlockNotice): void {
    this.deadlock ??= notice;
  }

  /** The deadlock was escalated and answered: a new one may be noted. */
  deadlockSettled(): void {
    this.deadlock = undefined;
  }

  /** The overtaking this waiter was told of, until it has been escalated. */
  get overtaking(): Overtaking | undefined {
    return this.overtaken;
  }

  /** The overtaking was escalated and answered: a new one may be noted. */
  overtakingSettled(): void {
    this.overtaken = undefined;
  }

  // ---- Escalation ----

  /** How many times this run escalated, for the outcome's log line. */
  get escalations(): number {
    return this.escalationCount;
  }

  beginEscalation(reason: string, deadlock: boolean): void {
    this.escalationCount++;
    this.current.escalation = { reason, deadlock, flaggedForReview: false, resolution: null };
  }

  escalationPaged(flaggedForReview: boolean): void {
    this.current.escalation = { ...this.escalation(), flaggedForReview };
  }

  escalationResolved(resolution: Escalation['resolution']): void {
    this.current.escalation = { ...this.escalation(), resolution };
  }

  /** The operator's answer the handlers took, consumed: the next escalation waits for a new one. */
  takeOperatorAnswer(): OperatorDecision | undefined {
    const answer = this.operatorAnswer;
    this.operatorAnswer = undefined;
    return answer;
  }

  /** An operator's retry: this many more attempts and this much more time, from now. */
  grantExtraBudget(answer: { extraRetries: number; extraWaitMs: number }): void {
    this.grantedBudget = {
      ...this.grantedBudget,
      maxRetries: this.current.attempts - 1 + answer.extraRetries,
      maxTotalWaitMs: this.waitedMs() + answer.extraWaitMs,
    };
  }

  // ---- The hold ----

  /** Marks the start of the hold (counting what an earlier run already held). */
  holdGranted(lease: Lease): void {
    this.heldSince = Date.now() - (this.request.resume?.heldBeforeMs ?? 0);
    this.current.place = null;
    this.current.lease = lease;
    this.current.holder = this.requester;
  }

  renewed(lease: Lease): void {
    this.current.lease = lease;
  }

  releaseAnswered(answer: ReleaseAnswer): void {
    this.releaseAnswer = answer;
  }

  // ---- The end of the run ----

  /** What a continued run must know to go on waiting (`lease` null) or holding. */
  resume(lease: Lease | null): Resume {
    return {
      attempts: this.current.attempts,
      elapsedBeforeMs: lease ? 0 : this.waitedMs(),
      lease,
      heldBeforeMs: lease ? this.heldMs() : 0,
    };
  }

  /** This run is about to continue as new: waiting updates answer so, once every handler is done. */
  async handOverToNextRun(): Promise<void> {
    this.continuing = true;
    await condition(allHandlersFinished);
  }

  /** Ends the session: tells the parent, answers every waiting update, and returns the outcome. */
  async finish(outcome: SessionOutcome): Promise<SessionOutcome> {
    this.ended = outcome;
    if (this.request.notifyParent) await tellParent({ status: 'ended', outcome });
    await condition(allHandlersFinished);
    return outcome;
  }

  private escalation(): Escalation {
    if (!this.current.escalation) throw new Error('no escalation is under way');
    return this.current.escalation;
  }

  private ownerProblem(owner: unknown, releaseKey: unknown): string | null {
    // The digest comes with the start, in the memo (which only the starter sets), or, in a run
    // continued as new, in the request its previous run handed over.
    const releaseKeyDigest = this.releaseKeyDigest;
    // Sessions 0.1.0 started (before the release key) are released by name, as their callers do.
    const byNameAlone = releaseKeyDigest === undefined && !this.paths.leanWorkflowTasks;
    return leaseOwnerProblem(owner, releaseKey, this.key, this.requester, {
      ...(releaseKeyDigest ? { releaseKeyDigest } : {}),
      byNameAlone,
    });
  }

  private checkAnswer(answer: unknown) {
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
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require('../../policy/operatorAnswer') as typeof import('../../policy/operatorAnswer');
  return loaded.checkOperatorAnswer;
}
