// Renewing the leases whose keepers fell silent, for sessions that still hold them.
import { renewFenced, type RenewalDeps } from '../activities/leaseActions';
import type { SessionWaker } from '../activities/sessionSignals';
import { MAX_QUEUE_SWEEP_MS } from '../policy/constants';
import { SILENT_LEASE_FRACTION } from '../policy/decisions/leaseKeeping';
import type { LapsingLease } from '../policy/lockContract/stalledQueues';

/** What renewing silent leases needs: a fenced renewal's dependencies and a way to ask sessions. */
interface SilentLeaseDeps extends RenewalDeps {
  waker: Pick<SessionWaker, 'holds'>;
}

/**
 * Renews the leases whose keepers fell silent, for the sessions that still hold them. A lease below
 * SILENT_LEASE_FRACTION of its TTL has missed a renewal (its keeper's worker died or stalled), and
 * Temporal runs the keeper again only after the keeper's long heartbeat timeout
 * (policy/decisions/leaseKeeping.ts); meanwhile the sweep renews the lease, fenced by the token the lock service
 * lists, as the keeper would. A lease whose session ended, was terminated or never existed is left to
 * run out, and answered as lapsing, with how many sweeps of `everyMs` it may take to: its queue's head
 * is then told within a sweep of its end (policy/lockContract/stalledQueues.ts). One lock-service
 * call a sweep, then two Temporal calls (describe, state query) and one renewal a silent lease: a
 * keeper on schedule is never seen. Answers how many leases it renewed, and those it left lapsing.
 */
export async function renewSilentLeases(
  deps: SilentLeaseDeps,
  everyMs: number = MAX_QUEUE_SWEEP_MS,
): Promise<{ renewed: number; lapsing: LapsingLease[] }> {
  const { locks, log, waker } = deps;
  let renewed = 0;
  const lapsing: LapsingLease[] = [];
  for (const { key, holder, token, remainingMs } of await locks.leasesRunningLow(SILENT_LEASE_FRACTION)) {
    if (!(await waker.holds(key, holder, token))) {
      // Nobody will release it: the sweep wakes its queue at the first sweep after it runs out.
      lapsing.push({ key, sweepsLeft: Math.ceil(remainingMs / everyMs) + 1 });
      continue;
    }
    const result = await renewFenced(deps, { key, holder, token });
    log.warn(
      { event: 'lock.sweep-renew', key, holder, token, remainingMs, ok: result.ok },
      result.ok ? 'renewed a lease whose keeper fell silent' : 'could not renew a silent lease',
    );
    deps.metrics?.silentLeaseRenewals.inc({ result: result.ok ? 'ok' : 'refused' });
    if (result.ok) renewed++;
  }
  return { renewed, lapsing };
}
