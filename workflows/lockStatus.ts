// The lockStatus workflow: one key's holder and queue, read by an activity on the worker.
import type { LockStatus } from '../policy/lockContract/keyStatus';
import { nonRetryableOnBadInput } from '../temporal/failures';
import { lockCalls } from './lockCalls';

/**
 * Reads one key's holder and queue from the lock service, through an activity on the worker: the
 * caller (`lockctl status`) needs a Temporal client only, never the lock service's address or
 * credentials.
 */
export async function lockStatus(key: string): Promise<LockStatus> {
  const checked = await nonRetryableOnBadInput(() => loadKeyCheck()(key));
  return lockCalls.inspectLock.executeWithOptions({ summary: `read ${checked} on the lock service` }, [
    checked,
  ]);
}

// The key's schema is loaded by the status read alone, not by every session the worker loads (the
// workflow bundle's modules are evaluated per workflow; see bench/workflowLoadCost.ts).
function loadKeyCheck(): (key: unknown) => string {
  const schemas =
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('../policy/lockContract/lockSchemas') as typeof import('../policy/lockContract/lockSchemas');
  return (key) => schemas.parseOrThrow(schemas.lockKeySchema, key, 'lock key');
}
