// The retry-decision activities: the model, when one is configured, else the deterministic policy.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { parseOrThrow } from '../policy/lockContract/lockSchemas';
import { type DecisionRecord, type PolicyInput, policyRecord } from '../policy/decisions/decisionPolicy';
import {
  type DecisionContext,
  decisionContextSchema,
  FALLBACK_CAUSES,
  type FallbackCause,
} from '../policy/decisions/retryDecision';
import { redact } from '../policy/textSafety/redaction';
import { inertModelText, untrustedText } from '../policy/textSafety/untrustedText';
import { nonRetryableOnBadInput } from '../temporal/failures';
import type { ModelAnswer } from './anthropicDecider';
import type { Metrics } from './metrics';
import { MODEL_ALWAYS_ON, type ModelSwitchReader } from './modelSwitch';

/** Asks a model for a decision (see createAnthropicDecider); absent when no model is configured. */
export type Decider = (ctx: DecisionContext) => Promise<ModelAnswer>;

/** What the decision activity needs. */
interface DecisionActivityDeps {
  decider: Decider | null;
  log: Logger;
  /** Counts decisions and times the model; absent, nothing is counted. */
  metrics?: Metrics;
  /** This worker runs the lab-only single-process mode: every record it makes says so. */
  labSingleProcess?: boolean;
  /** The operators' kill switch (lockctl model off): while off, the policy answers. Absent: always on. */
  modelSwitch?: ModelSwitchReader;
}

/**
 * The activity that produces a retry decision: from the model when configured, else the policy. It
 * returns the decision as answered, its free text redacted; the workflow's guardrails, and nothing
 * here, decide what is done. Every model call writes one log line, also when it throws.
 */
export function createDecisionActivities({
  decider,
  log,
  metrics,
  labSingleProcess = false,
  modelSwitch = MODEL_ALWAYS_ON,
}: DecisionActivityDeps) {
  return {
    // The kill switch is read outside the model path, before it: an operator's "off" needs no model.
    decideRetry: async (input: PolicyInput) =>
      decider && (await modelSwitch.read()).model === 'off'
        ? decideRetry(input, null, 'model-switched-off')
        : decideRetry(input, decider),
    /**
     * The policy's decision, whatever model this worker has: sessions that began on a worker with no
     * model ask it as a local activity, in the workflow task of the denial, and keep doing so; so
     * does any session while the lock service cannot be reached (`cause`): an outage is not
     * contention, and no model is asked about it.
     */
    decideByPolicy: (input: PolicyInput, cause?: FallbackCause) =>
      decideRetry(input, null, FALLBACK_CAUSES.includes(cause as FallbackCause) ? cause : undefined),
  };

  async function decideRetry(
    input: PolicyInput,
    decider: Decider | null,
    cause: FallbackCause = 'no-model-configured',
  ): Promise<DecisionRecord> {
    const context = await nonRetryableOnBadInput(() =>
      parseOrThrow(decisionContextSchema, input.context, 'decision context'),
    );
    const started = performance.now();
    const line = {
      event: 'model-call',
      key: context.lockName,
      requester: context.requester,
      attempt: context.attempt,
    };
    const latencyMs = () => Math.round(performance.now() - started);
    let answer: ModelAnswer | null = null;
    try {
      answer = decider ? await decider(context) : null;
    } catch (error) {
      // Retryable model failures (rate limit, overload, unavailable) are Temporal's to retry.
      const failure = error instanceof Error ? error : new Error(String(error));
      metrics?.modelLatency.observe({ result: 'thrown' }, latencyMs() / 1000);
      log.warn(
        {
          ...line,
          provider: 'anthropic',
          outcome: 'thrown',
          errorType: errorType(failure),
          latencyMs: latencyMs(),
        },
        'model call for a retry decision failed, to be retried',
      );
      throw error;
    }
    const made = redactRecord(toRecord({ ...input, context }, answer, cause));
    const record: DecisionRecord = labSingleProcess ? { ...made, labSingleProcess: true } : made;
    if (answer) metrics?.modelLatency.observe({ result: answer.kind }, latencyMs() / 1000);
    if (answer?.kind === 'decision' && answer.repaired) metrics?.modelRepairs.inc({ result: 'valid' });
    if (answer?.kind === 'fallback' && answer.cause === 'invalid-after-repair')
      metrics?.modelRepairs.inc({ result: 'still-invalid' });
    metrics?.decisions.inc({
      provider: record.provider,
      decision: record.decision.decision,
      fallback_cause: record.fallbackCause ?? 'none',
    });
    // One line per model call (the session writes the decision's own line, with the back-off it
    // applied: workflows/session/decideStep.ts). No prompt text; the model's free text only as redacted.
    if (decider)
      log.info(
        {
          ...line,
          provider: record.provider,
          model: record.model,
          decision: record.decision.decision,
          backoffRequestedMs: record.decision.retry_after_ms ?? null,
          repaired: record.repaired,
          fallbackCause: record.fallbackCause,
          fallbackDetail: record.fallbackDetail,
          // What was masked before the model saw it: counts only, never the text.
          redactions: answer?.redactions,
          latencyMs: latencyMs(),
        },
        'model asked for a retry decision',
      );
    return record;
  }
}

// The record of a model's answer, or of the policy's when there is no model or the answer is unusable.
function toRecord(input: PolicyInput, answer: ModelAnswer | null, cause: FallbackCause): DecisionRecord {
  if (!answer) return policyRecord(input, cause);
  if (answer.kind === 'fallback') return policyRecord(input, answer.cause, answer.detail, answer.model);
  return {
    decision: answer.decision,
    provider: 'anthropic',
    model: answer.model,
    repaired: answer.repaired,
    fallbackCause: null,
    fallbackDetail: null,
  };
}

// The decision's free text (explanation, escalation reason; renewal advice is always null) passes
// redact() and loses control characters and Markdown's active ones (inertModelText), and the fallback
// detail is redacted and cleaned, before any summary, the UI's details, state, webhook, store or log
// line sees them.
function redactRecord(record: DecisionRecord): DecisionRecord {
  const clean = (text: string) => inertModelText(redact(text).text, 500);
  const cleanOptional = <T extends string | null | undefined>(text: T) =>
    typeof text === 'string' ? clean(text) : text;
  return {
    ...record,
    decision: {
      ...record.decision,
      explanation: clean(record.decision.explanation),
      escalation_reason: cleanOptional(record.decision.escalation_reason),
    },
    // Our own validation or API error, not model text: redacted and cleaned, its words kept as written.
    fallbackDetail:
      typeof record.fallbackDetail === 'string'
        ? untrustedText(redact(record.fallbackDetail).text, 500)
        : record.fallbackDetail,
  };
}

// A thrown failure's type for the log: the ApplicationFailure type when there is one, else its name.
function errorType(error: Error): string {
  const type = (error as { type?: unknown }).type;
  return typeof type === 'string' ? type : error.name;
}
