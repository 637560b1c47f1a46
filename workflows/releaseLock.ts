import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { SEARCH_ATTRIBUTES } from '../policy/constants';
import { NON_RETRYABLE_ERROR_TYPES } from '../policy/errors';
import type { FencedActionResult, Lease } from '../policy/lockSchemas';

const { releaseLock: releaseLease } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
});

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
  const result = await releaseLease.executeWithOptions({ summary: `release token ${lease.token}` }, [lease]);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.lockState, value: result.ok ? 'released' : 'release-refused' },
  ]);
  return result;
}
