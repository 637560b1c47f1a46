import { type AcquireRequest, parseAcquireRequest } from '../policy/acquireRequest';
import { nonRetryableOnBadInput } from '../temporal/failures';

/**
 * The check of a session's request, made at the edge rather than in the workflow: zod would cost
 * every workflow the worker loads about 9 ms and 1 MiB, because the SDK evaluates a workflow's
 * modules per workflow (bench/workflowLoadCost.ts); an activity's modules are evaluated once.
 */
export function createRequestActivities({ modelTaskQueue = null }: { modelTaskQueue?: string | null } = {}) {
  return {
    /**
     * Checks an acquisition request and fills in its defaults; bad input is a non-retryable
     * InvalidLockRequest naming each bad field. The answer also says where this worker's sessions ask
     * for decisions: the model worker's task queue when the roles run apart (recorded in the session's
     * history with the request, so a replay routes as the run did).
     */
    async checkAcquireRequest(input: unknown): Promise<CheckedRequest> {
      const request = await nonRetryableOnBadInput(() => parseAcquireRequest(input));
      return modelTaskQueue ? { ...request, modelTaskQueue } : request;
    },
  };
}

/** A checked request, and the model worker's task queue when decisions are made there. */
export type CheckedRequest = AcquireRequest & { modelTaskQueue?: string };
