import {
  allHandlersFinished,
  condition,
  continueAsNew,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AcquireRequest, RetryBudget } from '../../policy/acquireRequest';
import type { PastDecision } from '../../policy/decisionContext';
import type { Denial, Lease } from '../../policy/lockSchemas';
import type {
  DeadlockNotice,
  OperatorDecision,
  RecordedDecision,
  ReleaseAnswer,
  SessionOutcome,
  SessionPhase,
  SessionState,
} from '../../policy/session';
import type { WaitSituation } from '../../policy/waiting';
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes';
import type { acquireLock } from '../acquireLock';
import { tellParent } from './peerSignals';

/** What carries over to the next run when a session continues as new. */
export type Resume = NonNullable<AcquireRequest['resume']>;

/** How a phase ends the run: with the session's outcome, or by continuing as new. */
export type PhaseEnd = { outcome: SessionOutcome } | { resume: Resume };

/**
 * One acquisition session's state, owned in one place. Handlers set its flags; the phases read them
 * and move the session on through `enter`, which keeps the state query, the `LockState` search
 * attribute and the UI's current details in step.
 */
export class LockSession {
  readonly state: SessionState;
  /** The budget in force: the caller's, plus whatever an operator granted. */
  budget: RetryBudget;
  /** The last denial, for the decision and for the outcome of a session that gives up. */
  lastDenial: Denial | undefined;
  /** Decisions so far, as the next decision sees them. */
  readonly recentDecisions: PastDecision[] = [];
  previousBackoffMs: number;

  // Set by handlers.
  woken = false;
  /** When the release that woke this session freed the key (lock service clock), to time the hand-off. */
  releasedAt: number | undefined;
  releaseRequested = false;
  operatorAnswer: OperatorDecision | undefined;
  deadlockNotice: DeadlockNotice | undefined;
  releaseAnswer: ReleaseAnswer | undefined;
  ended: SessionOutcome | undefined;
  /** Set when this run continues as new: waiting updates answer so, and the caller asks the next run. */
  continuing = false;

  /** What the last denial showed, to tell whether a new decision is needed; null asks for one. */
  situation: WaitSituation | null = null;
  /** Denials in a row in which nothing moved (rule 4 counts these, not attempts). */
  unchangedDenials = 0;

  /** Workflow time (the SDK's replayed clock) at which waiting began, earlier runs included. */
  private readonly waitingSince: number;
  /** Workflow time at which the hold began, earlier runs included. */
  private heldSince = 0;

  constructor(readonly request: AcquireRequest) {
    this.budget = request.budget;
    this.previousBackoffMs = request.budget.baseBackoffMs;
    this.waitingSince = Date.now() - (request.resume?.elapsedBeforeMs ?? 0);
    this.state = {
      phase: 'acquiring',
      key: request.key,
      requester: request.requester,
      attempts: request.resume?.attempts ?? 0,
      decisions: [],
      holder: null,
      lease: request.resume?.lease ?? null,
      budgetLeft: { retries: request.budget.maxRetries, waitMs: request.budget.maxTotalWaitMs },
      waitedMs: request.resume?.elapsedBeforeMs ?? 0,
      waitingSince: this.waitingSince,
      place: null,
      escalation: null,
      ignoredOperatorAnswers: 0,
    };
    // A session started by the client carries these already; a child started by withLock does not.
    const shown = workflowInfo().typedSearchAttributes;
    const names = [
      { key: SEARCH_ATTRIBUTES.lockKey, value: request.key },
      { key: SEARCH_ATTRIBUTES.lockRequester, value: request.requester },
    ].filter(({ key, value }) => shown.get(key) !== value);
    if (names.length) upsertSearchAttributes(names);
  }

  get key(): string {
    return this.request.key;
  }

  get requester(): string {
    return this.request.requester;
  }

  /** The lease a continued run took over, still held; null for a run that must acquire. */
  get resumedLease(): Lease | null {
    return this.request.resume?.lease ?? null;
  }

  /** Moves the session to `phase`: its state, its `LockState` search attribute and the UI's details. */
  enter(phase: SessionPhase, details: string): void {
    this.state.phase = phase;
    // Each upsert is a visibility write on the server: none when the state shown is already this one.
    if (workflowInfo().typedSearchAttributes.get(SEARCH_ATTRIBUTES.lockState) !== phase)
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.lockState, value: phase }]);
    setCurrentDetails(details);
  }

  /** Time spent waiting so far, in workflow time. */
  waitedMs(): number {
    return Date.now() - this.waitingSince;
  }

  /** Time the lease has been held so far, in workflow time. */
  heldMs(): number {
    return Date.now() - this.heldSince;
  }

  /** Marks the start of the hold (counting what an earlier run already held). */
  startHold(lease: Lease): void {
    this.heldSince = Date.now() - (this.request.resume?.heldBeforeMs ?? 0);
    this.state.place = null;
    this.state.lease = lease;
    this.state.holder = this.requester;
  }

  /** The operator's answer the handlers took, consumed: the next escalation waits for a new one. */
  takeOperatorAnswer(): OperatorDecision | undefined {
    const answer = this.operatorAnswer;
    this.operatorAnswer = undefined;
    return answer;
  }

  /** Keeps the last ten decisions in the state, for the query and the UI. */
  recordDecision(decision: RecordedDecision): void {
    this.state.decisions = [...this.state.decisions.slice(-9), decision];
  }

  /** What a continued run must know to go on waiting (`lease` null) or holding. */
  resume(lease: Lease | null): Resume {
    return {
      attempts: this.state.attempts,
      elapsedBeforeMs: lease ? 0 : this.waitedMs(),
      lease,
      heldBeforeMs: lease ? this.heldMs() : 0,
    };
  }

  /** Ends the run: with the outcome (telling the parent and answering every waiting update), or by continuing as new. */
  async end(end: PhaseEnd): Promise<SessionOutcome> {
    if ('resume' in end) {
      this.continuing = true;
      await condition(allHandlersFinished);
      return continueAsNew<typeof acquireLock>({ ...this.request, budget: this.budget, resume: end.resume });
    }
    this.ended = end.outcome;
    if (this.request.notifyParent) await tellParent({ status: 'ended', outcome: end.outcome });
    await condition(allHandlersFinished);
    return end.outcome;
  }
}
