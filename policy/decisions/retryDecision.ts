// A retry decision and its context: the strict schema a model's answer must pass.
import { z } from 'zod';
import { denialCodeSchema, fairnessSchema } from '../lockContract/lockSchemas';

/**
 * What the decision maker (model or deterministic policy) is told about a failed acquisition. It has
 * no field that could carry a fencing token, a lease deadline on the wall clock, a credential or a
 * tenant payload: those cannot reach a prompt because they cannot be put here.
 */
export const decisionContextSchema = z.strictObject({
  lockName: z.string(),
  requester: z.string(),
  /** The thread of control the requester waits and holds for, when it names one: the wait-for graph's node. */
  owner: z.string().optional(),
  currentHolder: z.string().nullable(),
  lockTtlSeconds: z.number().nonnegative(),
  elapsedWaitSeconds: z.number().nonnegative(),
  maxWaitBudgetSeconds: z.number().positive(),
  fairnessPolicy: fairnessSchema,
  failureReason: z.string(),
  errorCode: denialCodeSchema,
  /**
   * The lock service's answer as it gave it, with its absolute times masked (the seed's "raw error
   * response", redacted): free text, cleaned and redacted again where it enters a prompt. Absent in
   * contexts from before it was added.
   */
  serviceResponse: z.string().max(1_000).optional(),
  /** The configured cap on any delay (the budget's maxBackoffMs, seed 000's max_backoff_ms). */
  maxBackoffMs: z.number().int().positive().optional(),
  consecutiveFailures: z.number().int().nonnegative(),
  otherWaitersExist: z.boolean(),
  constraints: z.array(z.string()).max(20),
  attempt: z.number().int().positive(),
  maxRetries: z.number().int().nonnegative(),
  /** How long the holder's lease has left, on the lock service's clock; null when no one holds it. */
  holderLeaseRemainingMs: z.number().int().nullable(),
  queuePosition: z.number().int().positive().nullable(),
  /** The requester keeps its place and a release wakes it at once: a delay is only its fallback. */
  wokenByRelease: z.boolean(),
  recentDecisions: z
    .array(
      z.strictObject({
        decision: z.string(),
        retryAfterMs: z.number().nullable(),
        failureReason: z.string(),
      }),
    )
    .max(5),
  /** Wait-for edges involving the requester's owner: `waiter` waits for `key`, held by `holder` (owners). */
  waitForEdges: z.array(z.strictObject({ waiter: z.string(), key: z.string(), holder: z.string() })).max(50),
});
export type DecisionContext = z.infer<typeof decisionContextSchema>;

const DECISIONS = ['retry', 'escalate', 'abandon'] as const;
const BACKOFF_STRATEGIES = ['linear', 'exponential', 'decorrelated-jitter'] as const;
const STARVATION_RISKS = ['low', 'medium', 'high'] as const;

/**
 * How many sentences a text holds: a sentence ends at `.`, `!` or `?` followed by a space and more
 * text. "1.5 s" and "ends." are one; "Wait. Then retry." is two; so is an abbreviation such as
 * "e.g. this", which the prompt's "one sentence" rules out too.
 */
function sentenceCount(text: string): number {
  return text.trim().split(/(?<=[.!?])\s+(?=\S)/).length;
}

/**
 * The decision's fields, exactly as the model must return them (the retry prompt's "exactly these fields"):
 * every one present, null where unused; unknown fields are refused.
 */
export const retryDecisionShape = z.strictObject({
  decision: z.enum(DECISIONS),
  retry_after_ms: z.number().int().nonnegative().nullable(),
  backoff_strategy: z.enum(BACKOFF_STRATEGIES).nullable(),
  // Kept because the retry prompt's schema lists it, and always null: retry advice and lease advice
  // never share a prompt (the lease boundary), so an answer that gives lease advice is repaired like any schema error.
  lease_renewal_instruction: z.null({ error: 'must be null: lease renewal is not advised on here' }),
  starvation_risk: z.enum(STARVATION_RISKS),
  deadlock_detected: z.boolean(),
  escalation_reason: z.string().max(500).nullable(),
  explanation: z
    .string()
    .min(1)
    .max(400)
    .refine((text) => sentenceCount(text) === 1, 'must be one sentence'),
});

/** A retry decision, validated: the shape above plus the fields each decision requires. */
export const retryDecisionSchema = retryDecisionShape.superRefine((d, ctx) => {
  if (d.decision === 'retry' && d.retry_after_ms === null) {
    ctx.addIssue({ code: 'custom', path: ['retry_after_ms'], message: 'is required when decision is retry' });
  }
  if (d.decision !== 'retry' && d.retry_after_ms !== null) {
    ctx.addIssue({
      code: 'custom',
      path: ['retry_after_ms'],
      message: 'must be null unless decision is retry',
    });
  }
  if (d.decision !== 'escalate' && d.escalation_reason !== null) {
    ctx.addIssue({
      code: 'custom',
      path: ['escalation_reason'],
      message: 'must be null unless decision is escalate',
    });
  }
  if (d.decision === 'escalate' && !d.escalation_reason?.trim()) {
    ctx.addIssue({
      code: 'custom',
      path: ['escalation_reason'],
      message: 'is required when decision is escalate',
    });
  }
});
export type RetryDecision = z.infer<typeof retryDecisionSchema>;

/** Who answered, and why the policy answered when a model was configured. */
export type DecisionProvider = 'anthropic' | 'policy';
export const FALLBACK_CAUSES = [
  'no-model-configured',
  'invalid-after-repair',
  'model-request-rejected',
  'model-unavailable',
  'lock-service-unreachable',
  'model-switched-off',
] as const;
export type FallbackCause = (typeof FALLBACK_CAUSES)[number];
