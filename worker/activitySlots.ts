// Worker options with room for the lease keepers: one long activity a held lease.
import type { WorkerOptions } from '@temporalio/worker';
import { DEFAULT_MAX_CONCURRENT_ACTIVITIES } from '../policy/constants';

/**
 * `options` with room for the lease keepers: each held lease's keeper is an activity that runs for the
 * whole hold (asleep between renewals), so the SDK's default of 100 activity slots would cap a worker
 * at 100 holders and starve every other activity. A limit or a tuner the worker's own options set is
 * kept.
 */
export function withKeeperSlots(options: WorkerOptions): WorkerOptions {
  if (options.maxConcurrentActivityTaskExecutions !== undefined || options.tuner !== undefined)
    return options;
  return { ...options, maxConcurrentActivityTaskExecutions: DEFAULT_MAX_CONCURRENT_ACTIVITIES };
}
