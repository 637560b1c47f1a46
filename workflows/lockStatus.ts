import { lockKeySchema, parseOrThrow } from '../policy/lockSchemas';
import type { LockStatus } from '../policy/lockStatus';
import { nonRetryableOnBadInput } from '../temporal/failures';
import { lockCalls } from './lockCalls';

/**
 * Reads one key's holder and queue from the lock service, through an activity on the worker: the
 * caller (`lockctl status`) needs a Temporal client only, never the lock service's address or
 * credentials.
 */
export async function lockStatus(key: string): Promise<LockStatus> {
  const checked = await nonRetryableOnBadInput(() => parseOrThrow(lockKeySchema, key, 'lock key'));
  return lockCalls.inspectLock.executeWithOptions({ summary: `read ${checked} on the lock service` }, [
    checked,
  ]);
}
