// One acquisition session: the only code that changes its state (held in sessionRecord.ts).
import { allHandlersFinished, condition } from '@temporalio/workflow';
import type { SessionAttempt } from '../../activities/lockActivities';
import { appliedAs, type GuardedStep, type RetryProgress } from '../../policy/decisions/guardrails';
import type { Overtaking } from '../../policy/lockContract/fairness';
import type { Denial, Lease } from '../../policy/lockContract/lockSchemas';
import type { DecisionRecord } from '../../policy/decisions/decisionPolicy';
import type { OperatorDecision, ReleaseAnswer, SessionOutcome } from '../../policy/sessionModel/sessionTypes';
import { needsDecision, nothingMoved, situationOf, wakeChangedNothing } from '../../policy/decisions/waiting';
import { SessionInbox } from './sessionInbox';
import type { Escalation, Resume } from './sessionRecord';

export type { DecisionRoute, Escalation, PhaseEnd, Resume } from './sessionRecord';

/**
 * One acquisition session's state, and the only code that changes it. Message handlers and phases
 * call its methods, each the one place where its change happens; `enter` keeps the state query, the
 * `LockState` search attribute and the UI's current details in step. Its fields and what the phases
 * read are in SessionRecord, what messages tell it in SessionInbox; the phases' records are here.
 */
export class LockSession extends SessionInbox {
  // ---- What the acquisition phase records ----

  /** Counts a fast-path attempt about to be made; a wake-up from here on ends the next wait. */
  beginAttempt(): number {
    this.wokenByRelease = false;
    this.wokenBy = null;
    return ++this.current.attempts;
  }

  /**
   * Counts the attempt that rode in the request's check, made before the session existed: a wake-up
   * delivered since (kept while the check ran) still ends the next wait.
   */
  countOpeningAttempt(): number {
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
    if (this.wokenEarly && wakeChangedNothing(this.situation, seen)) {
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
      appliedAs: appliedAs(step, parked),
      fallbackCause: record.fallbackCause,
      ...(record.labSingleProcess ? { labSingleProcess: true as const } : {}),
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

  /** Marks the start of the hold (or, in a run continued while holding, its going on). */
  holdGranted(lease: Lease, resumed = false): void {
    if (!resumed) this.heldSince = Date.now();
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

  /** What a continued run must know to go on waiting. */
  resume(): Resume {
    return { attempts: this.current.attempts, elapsedBeforeMs: this.waitedMs() };
  }

  /**
   * What a continued run must know to go on holding: the token to compare with the lock service's
   * (never to use: the next run reads the lease from the service), the hold limit's end, and a
   * release asked for by signal that this run did not get to.
   */
  resumeHolding(lease: Lease, limitAt: number): Resume {
    return {
      ...this.resume(),
      holding: {
        token: lease.token,
        grantedAt: lease.grantedAt,
        heldSince: this.heldSince,
        limitAt,
        releaseRequested: this.releaseSignalled,
      },
    };
  }

  /**
   * This run is about to continue as new: waiting updates answer so, once every handler is done.
   * Answers what the next run resumes, with a release asked for by signal meanwhile (no one awaits
   * its answer, so it is carried, not dropped).
   */
  async handOverToNextRun(resume: Resume): Promise<Resume> {
    this.continuing = true;
    await condition(allHandlersFinished);
    if (!resume.holding) return resume;
    return { ...resume, holding: { ...resume.holding, releaseRequested: this.releaseSignalled } };
  }

  /**
   * Ends the session: answers every waiting update, and returns the outcome (a withLock parent learns
   * of the end from the child's result, which only the server reports).
   */
  async finish(outcome: SessionOutcome): Promise<SessionOutcome> {
    this.ended = outcome;
    await condition(allHandlersFinished);
    return outcome;
  }

  private escalation(): Escalation {
    if (!this.current.escalation) throw new Error('no escalation is under way');
    return this.current.escalation;
  }
}
