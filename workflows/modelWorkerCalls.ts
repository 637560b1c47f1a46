// The activities called on the model worker's task queue.
import { type ActivityOptions, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { MODEL_QUEUE_WAIT_MS } from '../policy/constants';

/**
 * The activities, called on the model worker's task queue (`lockwarden-model-worker`) with `options`.
 * A call no model worker takes within MODEL_QUEUE_WAIT_MS fails with a schedule-to-start timeout,
 * which Temporal does not retry: the caller's own fallback (the policy, the template) answers.
 */
export function onModelWorker(taskQueue: string, options: ActivityOptions) {
  return proxyActivities<Activities>({ ...options, taskQueue, scheduleToStartTimeout: MODEL_QUEUE_WAIT_MS });
}
