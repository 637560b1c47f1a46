import { type AcquireRequest, parseAcquireRequest } from '../policy/acquireRequest';
import { nonRetryableOnBadInput } from '../temporal/failures';

/**
 * The check of a session's request, made at the edge rather than in the workflow: zod would cost
 * every workflow the worker loads about 9 ms and 1 MiB, because the SDK evaluates a workflow's
 * modules per workflow (bench/workflowLoadCost.ts); an activity's modules are evaluated once.
 */
export function createRequestActivities() {
  return {
    /**
     * Checks an acquisition request and fills in its defaults; bad input is a non-retryable
     * InvalidLockRequest naming each bad field.
     */
    async checkAcquireRequest(input: unknown): Promise<AcquireRequest> {
      return nonRetryableOnBadInput(() => parseAcquireRequest(input));
    },
  };
}
