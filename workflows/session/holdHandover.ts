// A hold that continues as new: when its history is full, and how the next run takes it up.
import { workflowInfo } from '@temporalio/workflow';
import { HOLD_HISTORY_EVENTS } from '../../policy/constants';
import { lockCalls, unlessUnreachable } from '../lockCalls';
import type { Acquisition } from './acquirePhase';
import type { LockSession, Resume } from './lockSession';

/** What a run continued while holding carries (policy/decisions/acquireRequest.ts). */
export type CarriedHold = NonNullable<Resume['holding']>;

/** Messages have grown the hold's history past its bound (or Temporal suggests a new run). */
export function historyFull(): boolean {
  const info = workflowInfo();
  return info.historyLength >= HOLD_HISTORY_EVENTS || info.continueAsNewSuggested;
}

/**
 * A run continued while holding: the lease as the lock service shows it now, held on only if the
 * service still shows this session's token (the carried token is compared, never used), with the
 * keeper and the holder's watch started afresh. Otherwise the hold was lost in between.
 */
export async function holdingAgain(session: LockSession, carried: CarriedHold): Promise<Acquisition> {
  const live = await unlessUnreachable(() =>
    lockCalls.leaseHeldBy.executeWithOptions({ summary: `read the lease token ${carried.token} holds` }, [
      session.key,
      session.requester,
    ]),
  );
  if (live && live.token === carried.token)
    return { kind: 'held', lease: { ...live, grantedAt: carried.grantedAt } };
  const reason =
    live === null
      ? 'lease lost: the lock service no longer shows it for this session (or could not be reached) after the run continued as new'
      : `lease lost: the lock service shows token ${live.token}, not ${carried.token}, after the run continued as new`;
  const lease = {
    key: session.key,
    holder: session.requester,
    token: carried.token,
    leaseUntil: 0,
    grantedAt: carried.grantedAt,
  };
  session.enter('lease-lost', reason);
  return { kind: 'ended', outcome: { status: 'lease-lost', lease, attempts: session.attempts, reason } };
}
