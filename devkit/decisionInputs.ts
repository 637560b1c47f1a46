// Decision inputs the tests and benches share: valid and malformed model answers, contexts.
import { retryBudgetSchema } from '../policy/decisions/acquireRequest';
import type { RetryProgress } from '../policy/decisions/guardrails';
import type { PolicyInput } from '../policy/decisions/decisionPolicy';

/** A decision that passes the strict schema: what a well-behaved model answers. */
export const VALID_DECISION = {
  decision: 'retry',
  retry_after_ms: 400,
  backoff_strategy: 'exponential',
  lease_renewal_instruction: null,
  starvation_risk: 'low',
  deadlock_detected: false,
  escalation_reason: null,
  explanation: 'The holder should release soon.',
};

/** The budget of the decision tests' session. */
export const budget = retryBudgetSchema.parse({
  maxRetries: 10,
  maxTotalWaitMs: 20_000,
  maxBackoffMs: 2_000,
  baseBackoffMs: 100,
});

/** A decision request after a second denial, with the holder's lease far from expiry. */
export const baseInput: PolicyInput = {
  context: {
    lockName: 'billing/nightly-export',
    requester: 'replica-b',
    currentHolder: 'replica-a',
    lockTtlSeconds: 30,
    elapsedWaitSeconds: 2,
    maxWaitBudgetSeconds: 20,
    fairnessPolicy: 'FIFO',
    failureReason: 'lock held by another client',
    errorCode: 'HELD',
    consecutiveFailures: 2,
    otherWaitersExist: false,
    constraints: [],
    attempt: 2,
    maxRetries: 10,
    holderLeaseRemainingMs: 12_000,
    queuePosition: 1,
    wokenByRelease: false,
    recentDecisions: [],
    waitForEdges: [],
  },
  tuning: { baseBackoffMs: 100, maxBackoffMs: 2_000, previousBackoffMs: 100, queueTicketMs: 30_000 },
  jitterSample: 0.5,
};

/** How far the session of {@link baseInput} has got, for the guardrails. */
export const baseProgress: RetryProgress = { attempts: 2, elapsedMs: 2_000 };
