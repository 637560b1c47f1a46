// A waiter told it was overtaken checks the notice on the lock service before it escalates.
import { overtakingConfirmed } from '../../policy/fairness';
import { handoffCalls } from '../lockCalls';
import type { LockSession } from './lockSession';

/**
 * Reads the key's holder and queue from the lock service and settles the session's overtaking claim
 * on them (policy/fairness.ts, overtakingConfirmed): a confirmed one is escalated by the acquisition
 * phase; another is refused, logged and counted.
 */
export async function confirmOvertaking(session: LockSession): Promise<void> {
  const claim = session.overtakingClaim;
  if (!claim) return;
  const service = await handoffCalls.queueOf.executeWithOptions(
    { summary: 'check an overtaking notice on the lock service' },
    [session.key],
  );
  session.overtakingClaimChecked(overtakingConfirmed(claim, service));
}
