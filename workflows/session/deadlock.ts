// Deadlock: finding a wait-for cycle through the session, and checking one another session claims.
import type { DeadlockNotice, SessionOutcome } from '../../policy/sessionModel/sessionTypes';
import {
  cycleThrough,
  describeCycle,
  type WaitForEdge,
  waitingRequester,
} from '../../policy/lockContract/waitForGraph';
import { sleep } from '@temporalio/workflow';
import { handoffCalls, unlessUnreachable } from '../lockCalls';
import type { EscalationCause } from './escalation';
import { leaveQueue } from './fastPath';
import type { LockSession } from './lockSession';
import { tellOfDeadlock } from './peerSignals';
import { untrustedText } from '../../policy/textSafety/untrustedText';

/**
 * The harness's own deadlock check, from the lock service's holdings and waits: when a cycle of
 * waits runs through this session, everyone in it is told (so all of them stop, even once the first
 * to leave its queue hides the cycle) and the session notes it. Returns whether one was found.
 */
export async function findDeadlock(session: LockSession, edges: WaitForEdge[]): Promise<boolean> {
  const cycle = cycleThrough(session.graphNode, edges);
  if (!cycle) return false;
  const notice = noticeOf(cycle);
  const others = cycle.filter((e) => waitingRequester(e) !== session.requester || e.key !== session.key);
  for (const edge of others) await tellOfDeadlock(edge.key, waitingRequester(edge), notice);
  session.noteDeadlock(notice);
  // The others check the notice on the lock service's graph before they act: this session keeps its
  // place (and so the cycle) meanwhile, or the first to look would find it already broken.
  if (others.length)
    await sleep(DEADLOCK_CONFIRM_GRACE_MS, { summary: 'keep the place while the cycle is confirmed' });
  return true;
}

/** How long the session that found a cycle keeps its place for the others to confirm it. */
const DEADLOCK_CONFIRM_GRACE_MS = 2_000;

// One session escalates the cycle; the rule is the same for every member, so they agree.
function noticeOf(cycle: WaitForEdge[]): DeadlockNotice {
  return { cycle: describeCycle(cycle), escalator: cycle.map((e) => e.waiter).sort()[0]!, edges: cycle };
}

/**
 * Checks a deadlock notice another session sent against the lock service's own holdings and tickets:
 * the session acts on a cycle through it that the service shows (its own reading of it, escalator
 * included), never on the notice's words. While the service cannot be reached the claim waits,
 * unchecked, for the next turn of the acquisition loop: a notice never ends a session.
 */
export async function confirmDeadlockClaim(session: LockSession): Promise<void> {
  const edges = await unlessUnreachable(() =>
    handoffCalls.waitForEdgesAround.executeWithOptions(
      { summary: 'check a deadlock notice on the lock service' },
      [session.graphNode],
    ),
  );
  if (edges === null) return;
  const cycle = cycleThrough(session.graphNode, edges);
  session.deadlockClaimChecked(cycle ? noticeOf(cycle) : null);
}

/**
 * Acts on a deadlock this session found or was told of: it leaves the queue (having left it, it is
 * never handed a lease); the escalator is told to escalate, the others halt.
 */
export async function settleDeadlock(
  session: LockSession,
  notice: DeadlockNotice,
): Promise<{ kind: 'ended'; outcome: SessionOutcome } | { kind: 'escalate'; cause: EscalationCause }> {
  await leaveQueue(session, 'deadlock');
  // A notice sent by a 0.1.0 session names the cycle in words only.
  const cycle = notice.edges ?? [];
  const reason = `deadlock: ${notice.cycle}`;
  if (notice.escalator !== session.graphNode) {
    session.enter('halted', `halted: deadlock (${notice.cycle}); ${notice.escalator} escalates it`);
    const deadlock = { cycle, escalator: notice.escalator };
    const outcome: SessionOutcome = {
      status: 'halted',
      attempts: session.attempts,
      reason: `${reason}; escalated by ${notice.escalator}`,
      deadlock,
    };
    return { kind: 'ended', outcome };
  }
  return { kind: 'escalate', cause: { reason, deadlock: true, cycle, keepsPlace: false } };
}

/**
 * A decision flagged a deadlock (seed 000: halt and route to a human, never a silent back-off). The
 * session reads the wait-for graph around it from the lock service at once: a cycle there is
 * settled as the harness's own finding (every member halts, one pages on-call); without one, or
 * while the service cannot be reached, this session escalates, its place kept, with a reason that
 * names the suspicion and what the graph showed. Returns that escalation's cause, or null when the
 * cycle is confirmed and noted (the acquisition loop settles it next).
 */
export async function checkSuspectedDeadlock(
  session: LockSession,
  suspicion: string,
  keepsPlace: boolean,
): Promise<EscalationCause | null> {
  const edges = await unlessUnreachable(() =>
    handoffCalls.waitForEdgesAround.executeWithOptions(
      { summary: "check the decision's deadlock flag on the lock service" },
      [session.graphNode],
    ),
  );
  if (edges !== null && (await findDeadlock(session, edges))) return null;
  const graph =
    edges === null
      ? 'the lock service could not be reached to check it'
      : "the lock service's wait-for graph shows no cycle through this session";
  const reason = `the decision flagged a deadlock (${untrustedText(suspicion, 160)}); ${graph}: a human decides`;
  return { reason, deadlock: false, cycle: null, keepsPlace };
}
