import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { RetryBudget } from '../policy/acquireRequest';
import { decideByPolicy, type PolicyTuning } from '../policy/decisionPolicy';
import { guardDecision, type RetryProgress } from '../policy/guardrails';
import { parseOrThrow } from '../policy/lockSchemas';
import { type DecisionContext, decisionContextSchema, type DecisionRecord } from '../policy/retryDecision';
import type { ModelAnswer } from './anthropicDecider';
import { asNonRetryableOnBadInput } from './nonRetryable';

/** Asks a model for a decision (see createAnthropicDecider); absent when no model is configured. */
export type Decider = (ctx: DecisionContext) => Promise<ModelAnswer>;

/** What the decision activity needs. */
export interface DecisionActivityDeps {
  decider: Decider | null;
  log: Logger;
}

/** One decision request from the workflow: the context, plus what the policy and the log line need. */
export interface DecideRetryInput {
  context: DecisionContext;
  tuning: PolicyTuning;
  /** A number in [0, 1) drawn by the workflow's deterministic random, for the policy's jitter. */
  jitterSample: number;
  progress: RetryProgress;
  budget: RetryBudget;
  harnessDeadlock: string | null;
}

/** The activity that produces a retry decision: from the model when configured, else the policy. */
export function createDecisionActivities({ decider, log }: DecisionActivityDeps) {
  return {
    async decideRetry(input: DecideRetryInput): Promise<DecisionRecord> {
      const context = await asNonRetryableOnBadInput(async () =>
        parseOrThrow(decisionContextSchema, input.context, 'decision context'),
      );
      const started = performance.now();
      const policy = () => decideByPolicy(context, input.tuning, () => input.jitterSample);
      let record: DecisionRecord;
      let answerRedactions: ModelAnswer['redactions'] = undefined;
      if (!decider) {
        record = {
          decision: policy(),
          provider: 'policy',
          model: null,
          repaired: false,
          fallbackCause: 'no-model-configured',
          fallbackDetail: null,
        };
      } else {
        const answer = await decider(context);
        answerRedactions = answer.redactions;
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
            : {
                decision: policy(),
                provider: 'policy',
                model: answer.model,
                repaired: false,
                fallbackCause: answer.cause,
                fallbackDetail: answer.detail,
              };
      }
      const guarded = guardDecision(record.decision, input.progress, input.budget, input.harnessDeadlock);
      // One line per invocation. No prompt text, no model prose beyond the decision's enums.
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
          backoffAppliedMs: guarded.kind === 'sleep' ? guarded.sleepMs : null,
          guardedAs: guarded.kind,
          repaired: record.repaired,
          fallbackCause: record.fallbackCause,
          // What was masked before the model saw it: counts only, never the text.
          redactions: answerRedactions,
          latencyMs: Math.round(performance.now() - started),
        },
        'retry decision',
      );
      return record;
    },
  };
}
