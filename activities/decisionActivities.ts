import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { parseOrThrow } from '../policy/lockSchemas';
import {
  type DecisionContext,
  decisionContextSchema,
  type DecisionRecord,
  type PolicyInput,
  policyRecord,
} from '../policy/retryDecision';
import { nonRetryableOnBadInput } from '../temporal/failures';
import type { ModelAnswer } from './anthropicDecider';

/** Asks a model for a decision (see createAnthropicDecider); absent when no model is configured. */
export type Decider = (ctx: DecisionContext) => Promise<ModelAnswer>;

/** What the decision activity needs. */
export interface DecisionActivityDeps {
  decider: Decider | null;
  log: Logger;
}

/**
 * The activity that produces a retry decision: from the model when configured, else the policy. It
 * returns the decision as answered; the workflow's guardrails, and nothing here, decide what is done.
 */
export function createDecisionActivities({ decider, log }: DecisionActivityDeps) {
  return {
    async decideRetry(input: PolicyInput): Promise<DecisionRecord> {
      const context = await nonRetryableOnBadInput(() =>
        parseOrThrow(decisionContextSchema, input.context, 'decision context'),
      );
      const started = performance.now();
      const policyInput = { ...input, context };
      let record: DecisionRecord;
      let redactions: ModelAnswer['redactions'];
      if (!decider) {
        record = policyRecord(policyInput, 'no-model-configured');
      } else {
        const answer = await decider(context);
        redactions = answer.redactions;
        record =
          answer.kind === 'decision'
            ? {
                decision: answer.decision,
                provider: 'anthropic',
                model: answer.model,
                repaired: answer.repaired,
                fallbackCause: null,
                fallbackDetail: null,
              }
            : policyRecord(policyInput, answer.cause, answer.detail, answer.model);
      }
      // One line per decision. No prompt text, no model prose beyond the decision's enums.
      log.info(
        {
          event: 'retry-decision',
          key: context.lockName,
          requester: context.requester,
          attempt: context.attempt,
          provider: record.provider,
          model: record.model,
          decision: record.decision.decision,
          backoffRequestedMs: record.decision.retry_after_ms ?? null,
          repaired: record.repaired,
          fallbackCause: record.fallbackCause,
          // What was masked before the model saw it: counts only, never the text.
          redactions,
          latencyMs: Math.round(performance.now() - started),
        },
        'retry decision',
      );
      return record;
    },
  };
}
