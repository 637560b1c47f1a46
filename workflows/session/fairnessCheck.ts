// A waiter told it was overtaken checks the notice on the lock service before it escalates.
import { overtakingConfirmed } from '../../policy/lockContract/fairness';
import { handoffCalls, unlessUnreachable } from '../lockCalls';
import type { LockSession } from './lockSession';

/**
 * Reads the key's holder and queue from the lock service and settles the session's overtaking claim
 * on them (policy/lockContract/fairness.ts, overtakingConfirmed): a confirmed one is escalated by the acquisition
 * phase; another is refused, logged and counted. While the service cannot be reached the claim waits
 * for the next turn of the acquisition loop.
 */
export async function confirmOvertaking(session: LockSession): Promise<void> {
  const claim = session.overtakingClaim;
  if (!claim) return;
  const service = await unlessUnreachable(() =>
    handoffCalls.queueOf.executeWithOptions({ summary: 'check an overtaking notice on the lock service' }, [
      session.key,
    ]),
  );
  if (service) session.overtakingClaimChecked(overtakingConfirmed(claim, service));
}
