// The lease actions lock activities share: the deny gate, the fenced renewal, one log line each.
import { ApplicationFailure } from '@temporalio/activity';
import type { Logger } from 'pino';
import type { LockService } from '../locks/lockService';
import { admitLeaseAction } from '../policy/textSafety/denyGate';
import { FAILURE_TYPES } from '../policy/errors';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { nonRetryableOnBadInput } from '../temporal/failures';
import type { Metrics } from './metrics';

/** The renewal check's answer: renewed until a new deadline, or why the lease is lost. */
export type RenewalResult = { ok: true; leaseUntil: number } | { ok: false; reason: string };

/** What a fenced renewal needs: the lock service, a logger, and (optionally) the metrics it counts in. */
export interface RenewalDeps {
  locks: LockService;
  log: Logger;
  metrics?: Metrics;
}

/**
 * A fenced renew at the lock service, which extends the lease only while the service still holds the
 * token it issued at acquisition; never renews with any other token. A refusal reads the key back to
 * say what the service holds now (one call a renewal otherwise). Counts the renewal by its result.
 */
export async function renewFenced(
  { locks, log, metrics }: RenewalDeps,
  lease: Pick<Lease, 'key' | 'holder' | 'token'>,
): Promise<RenewalResult> {
  gateLeaseAction('renew', lease.token);
  const renewed = await nonRetryableOnBadInput(() =>
    locks.renew({ key: lease.key, holder: lease.holder, token: lease.token }),
  );
  let result: RenewalResult;
  if (renewed.ok) result = { ok: true, leaseUntil: renewed.leaseUntil ?? renewed.serviceTime };
  else {
    const current = await locks.inspect(lease.key);
    if (current.holder === null) result = { ok: false, reason: 'the lease expired' };
    else if (current.holder !== lease.holder || current.token !== lease.token)
      result = {
        ok: false,
        reason: `the service now holds token ${current.token ?? 'none'} for ${current.holder}, not token ${lease.token}`,
      };
    else result = { ok: false, reason: `renewal refused: ${renewed.reason}` };
  }
  logLeaseAction(log, locks.backend, 'renew', lease, result);
  metrics?.renewals.inc({ result: result.ok ? 'ok' : 'refused' });
  return result;
}

const LEASE_ACTION_MESSAGES = {
  renew: { ok: 'lease renewed', refused: 'renewal refused' },
  release: { ok: 'lease released', refused: 'release refused' },
} as const;

/** One log line per lease action, with the lock service's verdict. */
export function logLeaseAction(
  log: Logger,
  backend: string,
  action: 'renew' | 'release',
  lease: Pick<Lease, 'key' | 'holder'>,
  result: { ok: true } | { ok: false; reason: string },
): void {
  const { key, holder } = lease;
  const reason = result.ok ? undefined : result.reason;
  const messages = LEASE_ACTION_MESSAGES[action];
  log.info(
    { event: `lock.${action}`, backend, key, holder, ok: result.ok, reason },
    result.ok ? messages.ok : messages.refused,
  );
}

/** Lease actions pass the deny gate here, on the lock-client path, and nowhere else. */
export function gateLeaseAction(action: 'renew' | 'release', token: string): void {
  const verdict = admitLeaseAction({ action, source: 'lock_client', token });
  if (!verdict.admitted)
    throw ApplicationFailure.nonRetryable(
      `lease ${action} refused by the deny gate: ${verdict.reason}`,
      FAILURE_TYPES.leaseActionDenied,
    );
}
