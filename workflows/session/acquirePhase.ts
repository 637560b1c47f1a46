import { condition, workflowInfo } from '@temporalio/workflow';
import type { Lease } from '../../policy/lockSchemas';
import { untrustedText } from '../../policy/untrustedText';
import { lockCalls } from '../lockCalls';
import { decideAfterDenial } from './decideStep';
import { findDeadlock, settleDeadlock } from './deadlock';
import { escalateAndWait, leaveQueue } from './escalation';
import type { LockSession, PhaseEnd } from './lockSession';
import { wakeSession } from './peerSignals';

/**
 * The acquisition phase: the fast path; on each denial a deadlock check, then a retry decision
 * bounded by the guardrails and a durable back-off that a release cuts short; escalation when the
 * guardrails or the decision say so. Ends holding a lease, or with the session's end.
 */
export async function acquireUntilHeld(session: LockSession): Promise<{ lease: Lease } | PhaseEnd> {
  const { key, requester, request } = session;
  session.enter('acquiring', `acquiring ${key} for ${requester}`);
  for (;;) {
    const notice = session.deadlockNotice;
    if (notice && session.lastDenial) {
      const end = await settleDeadlock(session, notice, session.lastDenial);
      if (end) return end;
      continue;
    }

    // A wake-up that arrives from here on (during the fast path or the decision) ends the next back-off.
    session.woken = false;
    const attempts = ++session.state.attempts;
    const attempt = await lockCalls.tryAcquireLock.executeWithOptions(
      { summary: `fast path, attempt ${attempts}` },
      [{ key, requester, ttlMs: request.ttlMs, fairness: request.fairness, priority: request.priority }],
    );
    if (attempt.granted) return { lease: attempt.lease };
    const denial = attempt.denial;
    session.lastDenial = denial;
    session.state.holder = denial.holder;

    // A free lock this session may not take yet: make sure the head of the queue knows.
    if (denial.code === 'QUEUED' && attempt.queueHead && attempt.queueHead !== requester) {
      await wakeSession(key, attempt.queueHead);
    }
    const edges = attempt.waitForEdges ?? [];
    if (await findDeadlock(session, edges)) continue;

    const { record, step } = await decideAfterDenial(session, denial, edges);
    if (step.kind === 'escalate') {
      await leaveQueue(session, 'escalated');
      const end = await escalateAndWait(session, step.reason, step.deadlock, denial);
      if (end) return end;
      continue;
    }
    if (step.kind === 'abandon') {
      await leaveQueue(session, 'abandoned');
      session.enter('abandoned', `abandoned after ${attempts} attempt(s): ${step.reason}`);
      const outcome = { status: 'abandoned' as const, attempts, waitedMs: session.waitedMs() };
      return { outcome: { ...outcome, lastDenial: denial, reason: step.reason } };
    }

    session.previousBackoffMs = step.sleepMs;
    const strategy = record.decision.backoff_strategy ?? 'unspecified';
    const clampNote = step.clamped ? ` (asked ${record.decision.retry_after_ms} ms, clamped)` : '';
    session.enter('backing-off', `${denial.reason}; retrying in ${step.sleepMs} ms (${record.provider})`);
    // A durable timer that a release signal cuts short.
    await condition(() => session.woken, step.sleepMs, {
      summary:
        `backoff ${step.sleepMs} ms, ${strategy}, attempt ${attempts} of ${session.budget.maxRetries + 1}${clampNote}: ` +
        untrustedText(record.decision.explanation, 160),
    });
    if (workflowInfo().continueAsNewSuggested) return { resume: session.resume(null) };
  }
}
