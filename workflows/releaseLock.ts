import { upsertSearchAttributes } from '@temporalio/workflow';
import type { FencedActionResult, Lease } from '../policy/lockSchemas';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';
import { lockCalls } from './lockCalls';

/**
 * Releases a lease, owner-only and fenced by its token: the lock service ignores the release when
 * (holder, token) is no longer current, and the result says why.
 */
export async function releaseLock(
  lease: Pick<Lease, 'key' | 'holder' | 'token'>,
): Promise<FencedActionResult> {
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.lockKey, value: lease.key },
    { key: SEARCH_ATTRIBUTES.lockRequester, value: lease.holder },
  ]);
  const result = await lockCalls.releaseLock.executeWithOptions({ summary: `release token ${lease.token}` }, [
    lease,
  ]);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.lockState, value: result.ok ? 'released' : 'release-refused' },
  ]);
  return result;
}
