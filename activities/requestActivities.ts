// The check of a session's request, made at the edge, with the first fast-path attempt riding
// along.
import {
  type AcquireRequest,
  parseAcquireRequest,
  type SessionRequest,
} from '../policy/decisions/acquireRequest';
import { firstFastPathRequest } from '../policy/decisions/firstAttempt';
import {
  DEFAULT_OPERATOR_HOLD_LIMITS,
  holdLimitsOf,
  type OperatorHoldLimits,
} from '../policy/decisions/holdLimits';
import type { Logger } from 'pino';
import { readConstraints } from '../policy/decisions/constraints';
import { InvalidLockRequestError } from '../policy/errors';
import { redact } from '../policy/textSafety/redaction';
import { untrustedText } from '../policy/textSafety/untrustedText';
import type { TryAcquireRequest } from '../policy/lockContract/lockSchemas';
import { nonRetryableOnBadInput } from '../temporal/failures';
import type { SessionAttempt } from './lockActivities';

/**
 * The check of a session's request, made at the edge rather than in the workflow: zod would cost
 * every workflow the worker loads about 9 ms and 1 MiB, because the SDK evaluates a workflow's
 * modules per workflow (bench/workflowLoadCost.ts); an activity's modules are evaluated once.
 */
export function createRequestActivities({
  modelTaskQueue = null,
  hasModel = false,
  holdLimits = DEFAULT_OPERATOR_HOLD_LIMITS,
  strictConstraints = false,
  log,
}: {
  modelTaskQueue?: string | null;
  hasModel?: boolean;
  holdLimits?: OperatorHoldLimits;
  /** Refuse a constraint in no known form, rather than accept it as advisory (the operator's setting). */
  strictConstraints?: boolean;
  log?: Logger;
} = {}) {
  return {
    /**
     * Checks an acquisition request and fills in its defaults; bad input is a non-retryable
     * InvalidLockRequest naming each bad field, and so is a hold limit or holder TTL above this
     * worker's maxima (its operator's to set). The answer also says where this worker's sessions ask
     * for decisions: the model worker's task queue when the roles run apart, or the policy, here, when
     * this worker has no model at all (recorded in the session's history with the request, so a
     * replay routes as the run did).
     */
    async checkAcquireRequest(input: unknown): Promise<CheckedRequest> {
      const request = await nonRetryableOnBadInput(() => withinLimits(parseAcquireRequest(input)));
      if (!request.resume) await nonRetryableOnBadInput(() => noteAdvisoryConstraints(request));
      if (modelTaskQueue) return { ...request, modelTaskQueue };
      return hasModel ? request : { ...request, decisionsByPolicy: true };
    },
  };

  /**
   * Constraints in no form the harness enforces: refused when the operator said strict, otherwise
   * accepted as advisory and said so in a warning line (redacted: a constraint is the caller's text).
   */
  function noteAdvisoryConstraints(request: AcquireRequest): void {
    const read = readConstraints(request.constraints, { strict: strictConstraints });
    if (!read.ok)
      throw new InvalidLockRequestError(
        'acquisition request',
        read.problems.map((p) => `constraints${p.index === null ? '' : `.${p.index}`}: ${p.message}`),
      );
    if (read.rules.advisory.length)
      log?.warn(
        {
          event: 'constraints.not-enforced',
          key: request.key,
          requester: request.requester,
          constraints: read.rules.advisory.map((text) => untrustedText(redact(text).text, 200)),
        },
        'constraints in no form the harness enforces: given to the model as data, not enforced',
      );
  }

  /** The request with its hold limit filled in, or InvalidLockRequest naming each limit it exceeds. */
  function withinLimits(request: AcquireRequest): SessionRequest {
    const limits = holdLimitsOf(request, holdLimits);
    if (!limits.ok) throw new InvalidLockRequestError('acquisition request', limits.problems);
    return { ...request, maxHoldMs: limits.maxHoldMs };
  }
}

/**
 * A checked request, and where its session asks for decisions: the model worker's task queue, or
 * (`decisionsByPolicy`) the policy in a local activity, since no model answers on this worker. Neither:
 * the decision activity on the session's own queue.
 */
export type CheckedRequest = SessionRequest & {
  modelTaskQueue?: string;
  decisionsByPolicy?: true;
};

/** A fresh session's checked request, with the lock service's answer to its first attempt. */
export interface CheckedFirstAttempt {
  request: CheckedRequest;
  attempt: SessionAttempt;
}

/**
 * The check of a fresh session's request and its first fast-path attempt, in one local activity: one
 * round trip between the workflow and the worker fewer on every acquire than the check followed by
 * the attempt. Run again whole when retried: both halves are idempotent. Only fresh sessions ask
 * it: a run continued as new tries from its own state (workflows/session/fastPath.ts).
 */
export function createFirstAttemptActivity(
  check: (input: unknown) => Promise<CheckedRequest>,
  tryAcquire: (request: TryAcquireRequest) => Promise<SessionAttempt>,
) {
  return {
    async checkRequestAndTryAcquire(input: unknown): Promise<CheckedFirstAttempt> {
      const request = await check(input);
      return { request, attempt: await tryAcquire(firstFastPathRequest(request)) };
    },
  };
}
