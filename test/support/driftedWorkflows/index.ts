import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../../../activities';
import type { AcquireRequestInput } from '../../../policy/decisions/acquireRequest';

// A deliberately incompatible edit of acquireLock (a timer before the fast path, added without
// patched()), bundled only by the replay suite to prove that replay catches such a change.
const { tryAcquireLock } = proxyActivities<Activities>({ startToCloseTimeout: '10 seconds' });

export async function acquireLock(input: AcquireRequestInput): Promise<unknown> {
  await sleep(10);
  return tryAcquireLock({ key: input.key, requester: input.requester, ttlMs: input.ttlMs ?? 30_000 });
}
