// A session's fields and what its phases read of them: the base of LockSession (lockSession.ts).
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { AcquireRequest, RetryBudget, SessionRequest } from '../../policy/decisions/acquireRequest';
import { type ConstraintRules, constraintRules, tightenBudget } from '../../policy/decisions/constraints';
import type { PastDecision } from '../../policy/decisions/decisionContext';
import type { Overtaking } from '../../policy/lockContract/fairness';
import type { Denial } from '../../policy/lockContract/lockSchemas';
import type { SpanContext } from '@opentelemetry/api';
import { RELEASE_KEY_MEMO } from '../../policy/lockContract/releaseKey';
import type {
  DeadlockNotice,
  OperatorDecision,
  ReleaseAnswer,
  SessionOutcome,
  SessionPhase,
  SessionState,
} from '../../policy/sessionModel/sessionTypes';
import { ticketSpanMs, type WaitSituation } from '../../policy/decisions/waiting';
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes';

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
 * A session's state and what its phases read of it. LockSession (lockSession.ts) is the one class
 * that changes it, its message intake in SessionInbox (sessionInbox.ts) between the two: each file a
 * concern, one object that owns every field.
 */
export class SessionRecord {
  protected readonly current: SessionState;
  /** The budget in force: the caller's within its constraints, plus whatever an operator granted. */
  protected grantedBudget: RetryBudget;
  /** The request's constraints, as the guardrails enforce them. */
  readonly constraints: ConstraintRules;
  protected denial: Denial | undefined;
  protected readonly pastDecisions: PastDecision[] = [];
  protected lastBackoffMs: number;
  protected escalationCount = 0;

  protected wokenByRelease = false;
  /** The last wait ended by a wake-up rather than its timer (see noteSituation). */
  protected wokenEarly = false;
  /** When the release that woke this session freed the key (lock service clock), to time the hand-off. */
  protected releasedAt: number | undefined;
  /** The traced release that woke this session, for its wait's span to link to (sessionTrace.ts). */
  protected wokenBy: SpanContext | null = null;
  protected releaseAsked = false;
  /** A release asked for by signal (no one awaits its answer): a holding run hands it to its next run. */
  protected releaseSignalled = false;
  protected operatorAnswer: OperatorDecision | undefined;
  protected deadlock: DeadlockNotice | undefined;
  protected deadlockClaimed: DeadlockNotice | undefined;
  protected overtaken: Overtaking | undefined;
  protected overtakingClaimed: Overtaking | undefined;
  protected releaseAnswer: ReleaseAnswer | undefined;
  protected ended: SessionOutcome | undefined;
  /** Set when this run continues as new: waiting updates answer so, and the caller asks the next run. */
  protected continuing = false;

  /** What the last denial showed, to tell whether a new decision is needed; null asks for one. */
  protected situation: WaitSituation | null = null;
  /** Denials in a row in which nothing moved (rule 4 counts these, not attempts). */
  protected unchanged = 0;

  /** Workflow time (the SDK's replayed clock) at which waiting began, earlier runs included. */
  protected readonly waitingSince: number;
  /** Workflow time at which the hold began, earlier runs included. */
  protected heldSince = 0;

  constructor(
    readonly request: SessionRequest,
    /** Where decisions are asked for, as the worker that checked the request said. */
    readonly decisions: DecisionRoute = { modelTaskQueue: null, byPolicy: false },
  ) {
    this.constraints = constraintRules(request.constraints);
    this.grantedBudget = tightenBudget(request.budget, this.constraints);
    this.lastBackoffMs = request.budget.baseBackoffMs;
    this.waitingSince = Date.now() - (request.resume?.elapsedBeforeMs ?? 0);
    const holding = request.resume?.holding;
    if (holding) this.heldSince = holding.heldSince;
    if (holding?.releaseRequested) this.releaseAsked = this.releaseSignalled = true;
    this.current = {
      phase: 'acquiring',
      key: request.key,
      requester: request.requester,
      owner: request.owner ?? null,
      attempts: request.resume?.attempts ?? 0,
      decisions: [],
      holder: null,
      lease: null,
      budgetLeft: { retries: this.grantedBudget.maxRetries, waitMs: this.grantedBudget.maxTotalWaitMs },
      waitedMs: request.resume?.elapsedBeforeMs ?? 0,
      waitingSince: this.waitingSince,
      place: null,
      escalation: null,
      constraintsNotEnforced: this.constraints.advisory,
      escalationContact: this.constraints.escalationContact,
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

  /** The digest of this lease's release key (see policy/lockContract/releaseKey.ts), if the session has one. */
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

  /** The traced message (a release's wake-up) that last woke this session, or null. */
  get wakeOrigin(): SpanContext | null {
    return this.wokenBy;
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

  /** The span its queue ticket is asked to live at this attempt: the session's whole wait from here. */
  ticketSpanMs(): number {
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
}
