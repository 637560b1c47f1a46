// The releaseLock workflow: an operator's fenced force-release.
import { upsertSearchAttributes } from '@temporalio/workflow';
import type { FencedActionResult, ForceRelease, Lease } from '../policy/lockContract/lockSchemas';
import { nonRetryableOnBadInput } from '../temporal/failures';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';
import { lockCalls } from './lockCalls';

/**
 * An operator's force-release: takes a lease away from its holder, fenced by its token (the lock
 * service ignores it when (holder, token) is no longer current, and the result says why), with the
 * operator's reason logged and counted by the release activity.
 */
export async function releaseLock(
  input: Pick<Lease, 'key' | 'holder' | 'token'> & { reason: string },
): Promise<FencedActionResult> {
  // Any client may start this workflow with anything: a bad input fails it with a typed failure.
  const { reason, ...lease } = await nonRetryableOnBadInput(() => loadTargetCheck()(input));
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.lockKey, value: lease.key },
    { key: SEARCH_ATTRIBUTES.lockRequester, value: lease.holder },
  ]);
  const result = await lockCalls.releaseFencedLease.executeWithOptions(
    { summary: `force-release token ${lease.token}` },
    [lease, 'operator', reason],
  );
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.lockState, value: result.ok ? 'released' : 'release-refused' },
  ]);
  return result;
}

// The target's schema is loaded by this rare workflow alone, not by every session the worker loads.
function loadTargetCheck(): (input: unknown) => ForceRelease {
  const schemas =
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('../policy/lockContract/lockSchemas') as typeof import('../policy/lockContract/lockSchemas');
  return (input) => schemas.parseOrThrow(schemas.forceReleaseSchema, input, 'force-release request');
}
