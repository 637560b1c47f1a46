// The acquisition phase: the only place a session asks for the lease, and how it waits.
import { condition, workflowInfo } from '@temporalio/workflow';
import { describeOvertaking } from '../../policy/lockContract/fairness';
import type { SessionAttempt } from '../../activities/lockActivities';
import type { Denial, Lease } from '../../policy/lockContract/lockSchemas';
import type { SessionOutcome } from '../../policy/sessionModel/sessionTypes';
import { untrustedText } from '../../policy/textSafety/untrustedText';
import { canPark } from '../../policy/decisions/waiting';
import { decideAfterDenial, parkStep } from './decideStep';
import { checkSuspectedDeadlock, confirmDeadlockClaim, findDeadlock, settleDeadlock } from './deadlock';
import { confirmOvertaking } from './fairnessCheck';
import { awaitOperator, type EscalationCause, pageOnCall, resolvedByAcquisition } from './escalation';
import { leaveQueue, noteAttempt, tryFastPath } from './fastPath';
import type { LockSession, PhaseEnd } from './lockSession';
import { sessionMetrics } from './metricsSink';
import { inSpan } from '../../temporal/spans';
import { linkWake, sessionAttributes } from './sessionTrace';

/** How the acquisition phase ends: holding a lease, or with the session's end. */
export type Acquisition = { kind: 'held'; lease: Lease } | PhaseEnd;

/**
 * The acquisition phase, and the only place a session asks the lock service for the lease: the fast
 * path; on each denial a deadlock check, then (when the situation changed) a retry decision bounded
 * by the guardrails. A waiter with a place in the queue parks on one timer until a release wakes it or
 * a safety deadline comes; one without backs off. Escalation when the guardrails or the decision say
 * so; an escalated waiter that kept its place still tries when a release wakes it. `first` is the
 * answer to the session's first attempt when it rode in the request's check (checkRequestAndTryFirst):
 * the phase counts and records it here, as it does its own attempts.
 */
export async function acquireUntilHeld(
  session: LockSession,
  first: SessionAttempt | null = null,
): Promise<Acquisition> {
  const { key, requester, request } = session;
  const owner = request.owner ? ` (owner ${request.owner})` : '';
  session.enter('acquiring', `acquiring ${key} for ${requester}${owner}`);
  let made = first;
  if (made) session.countOpeningAttempt();
  for (;;) {
    if (session.deadlockClaim) await confirmDeadlockClaim(session);
    if (session.overtakingClaim) await confirmOvertaking(session);
    const notice = session.deadlockNotice;
    const lastDenial = session.lastDenial;
    if (notice && lastDenial) {
      const settled = await settleDeadlock(session, notice);
      const end = settled.kind === 'ended' ? settled : await escalate(session, settled.cause, lastDenial);
      session.deadlockSettled();
      if (end) return end;
      session.decideAfresh(); // an operator's grant: decide afresh
      continue;
    }
    const overtaking = session.overtaking;
    if (overtaking && lastDenial) {
      // A later arrival was put ahead of this waiter: a human looks; it keeps its place meanwhile.
      const cause = {
        reason: describeOvertaking(overtaking),
        deadlock: false,
        cycle: null,
        keepsPlace: true,
      };
      const end = await escalate(session, cause, lastDenial);
      session.overtakingSettled();
      if (end) return end;
      session.decideAfresh();
      continue;
    }

    const attempt = made ? noteAttempt(session, made) : await tryFastPath(session, 'fast path');
    made = null;
    if (attempt.granted) return { kind: 'held', lease: attempt.lease };
    const denial = attempt.denial;
    if (denial.code === 'CREDENTIALS_REFUSED') {
      // Not contention: no decision is asked and no back-off helps; a human fixes the credentials.
      const reason = `${denial.reason}: not contention, a human must fix the worker's credentials`;
      const end = await escalate(
        session,
        { reason, deadlock: false, cycle: null, keepsPlace: false },
        denial,
      );
      if (end) return end;
      session.decideAfresh();
      continue;
    }
    const edges = attempt.waitForEdges ?? [];
    if (await findDeadlock(session, edges)) continue;

    const parks = canPark(denial, request.wakeOnRelease);
    const ask = session.noteSituation(denial, parks);
    const attempts = session.attempts;
    const progress = { attempts, elapsedMs: session.waitedMs() };
    const decided = ask ? await decideAfterDenial(session, denial, edges, parks) : null;
    if (decided === 'woken') {
      session.decideAfresh(); // the decision was cut short: the next denial asks again
      continue;
    }
    // Nothing changed behind the same holder: the parked waiter parks again, asking nothing.
    const step = decided ? decided.step : parkStep(progress, session);

    if (step.kind === 'check-deadlock') {
      const cause = await checkSuspectedDeadlock(session, step.suspicion, parks);
      if (!cause) continue; // a cycle the service confirms: settled at the top of the loop
      if (!parks) await leaveQueue(session, 'escalated');
      const end = await escalate(session, cause, denial);
      if (end) return end;
      session.decideAfresh();
      continue;
    }
    if (step.kind === 'escalate') {
      // A waiter with a place keeps it while escalated: a release still wakes it, and it tries at
      // once. One in a deadlock gives its place up, or the cycle would stay.
      const keepsPlace = parks && !step.deadlock;
      if (!keepsPlace) await leaveQueue(session, 'escalated');
      const cause = { reason: step.reason, deadlock: step.deadlock, cycle: null, keepsPlace };
      const end = await escalate(session, cause, denial);
      if (end) return end;
      session.decideAfresh();
      continue;
    }
    if (step.kind === 'abandon') {
      await leaveQueue(session, 'abandoned');
      session.enter('abandoned', `abandoned after ${attempts} attempt(s): ${step.reason}`);
      const outcome: SessionOutcome = {
        status: 'abandoned',
        attempts,
        waitedMs: session.waitedMs(),
        lastDenial: denial,
        reason: step.reason,
      };
      return { kind: 'ended', outcome };
    }

    const of = `attempt ${attempts} of ${session.budget.maxRetries + 1}`;
    let summary: string;
    if (parks) {
      const behind = denial.holder ? ` behind ${denial.holder}` : '';
      const ends = step.parkEndsAtDelay ? ", or the model's delay ends it" : '';
      summary = `parked up to ${step.sleepMs} ms at place ${denial.position}${behind}, ${of}: a release wakes it${ends}`;
      session.enter('queued', `${denial.reason}; place ${denial.position} in the queue, woken by a release`);
    } else {
      const record = decided!.record;
      session.noteBackoff(step.sleepMs);
      const strategy = record.decision.backoff_strategy ?? 'unspecified';
      const clampNote = step.clamped ? ` (asked ${record.decision.retry_after_ms} ms, clamped)` : '';
      summary =
        `backoff ${step.sleepMs} ms, ${strategy}, ${of}${clampNote}: ` +
        untrustedText(record.decision.explanation, 160);
      session.enter('backing-off', `${denial.reason}; retrying in ${step.sleepMs} ms (${record.provider})`);
    }
    // One durable timer that a release signal cuts short.
    await inSpan('lockwarden.wait', waitAttributes(session, parks, step.sleepMs), async (span) => {
      if (parks) sessionMetrics.parked(step.sleepMs);
      const woken = await condition(() => session.woken, step.sleepMs, { summary });
      if (parks) sessionMetrics.unparked();
      session.waitEnded(woken);
      span.setAttribute('lockwarden.ended_by', woken ? 'wake-up' : 'timer');
      if (woken) linkWake(span, session.wakeOrigin);
    });
    if (workflowInfo().continueAsNewSuggested) return { kind: 'continued', resume: session.resume() };
  }
}

/**
 * Escalates and waits for the operator. A session that kept its place tries the fast path whenever
 * a release wakes it (or its ticket needs refreshing): if it acquires, the escalation resolves
 * itself. Returns the lease so acquired, or the session's end; undefined when the operator granted
 * more budget and the session should try again at once.
 */
async function escalate(
  session: LockSession,
  cause: EscalationCause,
  denial: Denial,
): Promise<Acquisition | undefined> {
  const escalation = await pageOnCall(session, cause);
  let inQueue = cause.keepsPlace;
  for (;;) {
    const event = await awaitOperator(session, escalation, inQueue, denial);
    if (event.kind === 'answered') return undefined;
    if (event.kind === 'ended') return event;
    const attempt = await tryFastPath(session, 'escalated, tries on a release');
    if (attempt.granted) {
      await resolvedByAcquisition(session, escalation);
      return { kind: 'held', lease: attempt.lease };
    }
    inQueue = attempt.denial.position !== null;
  }
}

// What a wait's span says: a park at the queue (a release ends it) or a back-off, and its bound.
function waitAttributes(session: LockSession, parks: boolean, sleepMs: number) {
  return {
    ...sessionAttributes(session),
    'lockwarden.wait': parks ? 'park' : 'backoff',
    'lockwarden.bound_ms': sleepMs,
    'lockwarden.attempts': session.attempts,
  };
}
