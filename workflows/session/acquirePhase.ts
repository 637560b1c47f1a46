import { condition, workflowInfo } from '@temporalio/workflow';
import type { Lease } from '../../policy/lockSchemas';
import { untrustedText } from '../../policy/untrustedText';
import { canPark, needsDecision, nothingMoved, situationOf } from '../../policy/waiting';
import { decideAfterDenial, parkStep } from './decideStep';
import { findDeadlock, settleDeadlock } from './deadlock';
import { tryFastPath } from './fastPath';
import { escalateAndWait, leaveQueue } from './escalation';
import type { LockSession, PhaseEnd } from './lockSession';
import { sessionMetrics } from './metricsSink';

/**
 * The acquisition phase: the fast path; on each denial a deadlock check, then (when the situation
 * changed) a retry decision bounded by the guardrails. A waiter with a place in the queue parks on one
 * timer until a release wakes it or a safety deadline comes; one without backs off. Escalation when
 * the guardrails or the decision say so. Ends holding a lease, or with the session's end.
 */
export async function acquireUntilHeld(session: LockSession): Promise<{ lease: Lease } | PhaseEnd> {
  const { key, requester, request } = session;
  session.enter('acquiring', `acquiring ${key} for ${requester}`);
  for (;;) {
    const notice = session.deadlockNotice;
    if (notice && session.lastDenial) {
      const end = await settleDeadlock(session, notice, session.lastDenial);
      if (end) return end;
      session.situation = null; // an operator's grant: decide afresh
      continue;
    }

    // A wake-up that arrives from here on (during the fast path or the decision) ends the next wait.
    session.woken = false;
    const attempt = await tryFastPath(session, 'fast path');
    const attempts = session.state.attempts;
    if (attempt.granted) return { lease: attempt.lease };
    const denial = attempt.denial;
    session.lastDenial = denial;
    session.state.holder = denial.holder;
    const edges = attempt.waitForEdges ?? [];
    if (await findDeadlock(session, edges)) continue;

    const seen = situationOf(denial);
    session.unchangedDenials = nothingMoved(session.situation, seen) ? session.unchangedDenials + 1 : 1;
    const parks = canPark(denial, request.wakeOnRelease);
    // Only a parked waiter goes without a decision: one that backs off needs a delay each time.
    const ask = !parks || needsDecision(session.situation, seen);
    session.situation = seen;
    const progress = { attempts, elapsedMs: session.waitedMs() };
    const decided = ask ? await decideAfterDenial(session, denial, edges, parks) : null;
    if (decided === 'woken') {
      session.situation = null; // the decision was cut short: the next denial asks again
      continue;
    }
    // Nothing changed behind the same holder: the parked waiter refreshed its ticket, and parks again.
    const step = decided ? decided.step : parkStep(denial, progress, session);

    if (step.kind === 'escalate') {
      // A waiter with a place keeps it while escalated: a release still wakes it, and it tries at
      // once. One in a deadlock gives its place up, or the cycle would stay.
      const keepsPlace = parks && !step.deadlock;
      if (!keepsPlace) await leaveQueue(session, 'escalated');
      const end = await escalateAndWait(
        session,
        { reason: step.reason, deadlock: step.deadlock, keepsPlace },
        denial,
      );
      if (end) return end;
      session.situation = null;
      continue;
    }
    if (step.kind === 'abandon') {
      await leaveQueue(session, 'abandoned');
      session.enter('abandoned', `abandoned after ${attempts} attempt(s): ${step.reason}`);
      const outcome = { status: 'abandoned' as const, attempts, waitedMs: session.waitedMs() };
      return { outcome: { ...outcome, lastDenial: denial, reason: step.reason } };
    }

    const of = `attempt ${attempts} of ${session.budget.maxRetries + 1}`;
    let summary: string;
    if (parks) {
      const behind = denial.holder ? ` behind ${denial.holder}` : '';
      summary = `parked up to ${step.sleepMs} ms at place ${denial.position}${behind}, ${of}: a release wakes it`;
      session.enter('queued', `${denial.reason}; place ${denial.position} in the queue, woken by a release`);
    } else {
      const record = decided!.record;
      session.previousBackoffMs = step.sleepMs;
      const strategy = record.decision.backoff_strategy ?? 'unspecified';
      const clampNote = step.clamped ? ` (asked ${record.decision.retry_after_ms} ms, clamped)` : '';
      summary =
        `backoff ${step.sleepMs} ms, ${strategy}, ${of}${clampNote}: ` +
        untrustedText(record.decision.explanation, 160);
      session.enter('backing-off', `${denial.reason}; retrying in ${step.sleepMs} ms (${record.provider})`);
    }
    // One durable timer that a release signal cuts short.
    if (parks) sessionMetrics.parked(step.sleepMs);
    await condition(() => session.woken, step.sleepMs, { summary });
    if (parks) sessionMetrics.unparked();
    if (workflowInfo().continueAsNewSuggested) return { resume: session.resume(null) };
  }
}
