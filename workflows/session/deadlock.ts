import type { Denial, Lease } from '../../policy/lockSchemas';
import type { DeadlockNotice } from '../../policy/session';
import { cycleThrough, type WaitForEdge } from '../../policy/waitForGraph';
import { escalateAndWait, leaveQueue } from './escalation';
import type { LockSession, PhaseEnd } from './lockSession';
import { tellOfDeadlock } from './peerSignals';

/**
 * The harness's own deadlock check, from the lock service's holdings and waits: when a cycle of
 * waits runs through this session, everyone in it is told (so all of them stop, even once the first
 * to leave its queue hides the cycle) and the session notes it. Returns whether one was found.
 */
export async function findDeadlock(session: LockSession, edges: WaitForEdge[]): Promise<boolean> {
  const cycle = cycleThrough(session.requester, edges);
  if (!cycle) return false;
  const notice: DeadlockNotice = {
    cycle: cycle.map((e) => `${e.waiter} waits for ${e.key} held by ${e.holder}`).join('; '),
    // One session escalates the cycle; the rule is the same for every member, so they agree.
    escalator: cycle.map((e) => e.waiter).sort()[0]!,
  };
  for (const edge of cycle.filter((e) => e.waiter !== session.requester)) {
    await tellOfDeadlock(edge.key, edge.waiter, notice);
  }
  session.deadlockNotice ??= notice;
  return true;
}

/**
 * Acts on a deadlock this session found or was told of: it leaves the queue; the escalator pages
 * on-call and waits for the operator, the others halt. Returns undefined when the operator granted
 * more budget and the session should try again (having left the queue, it is never handed a lease).
 */
export async function settleDeadlock(
  session: LockSession,
  notice: DeadlockNotice,
  lastDenial: Denial,
): Promise<{ lease: Lease } | PhaseEnd | undefined> {
  await leaveQueue(session, 'deadlock');
  if (notice.escalator !== session.requester) {
    const reason = `deadlock: ${notice.cycle}; escalated by ${notice.escalator}`;
    session.enter('halted', `halted: deadlock (${notice.cycle}); ${notice.escalator} escalates it`);
    return { outcome: { status: 'halted', attempts: session.state.attempts, reason } };
  }
  const why = { reason: `deadlock: ${notice.cycle}`, deadlock: true, keepsPlace: false };
  const end = await escalateAndWait(session, why, lastDenial);
  session.deadlockNotice = undefined;
  return end;
}
