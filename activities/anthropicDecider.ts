// The model lane of retry decisions: one forced tool call to Anthropic's Messages API, its answer
// checked strictly.
import { spansSeveralKeys } from '../policy/lockContract/waitForGraph';
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { describeIssues } from '../policy/errors';
import type { RedactionCounts } from '../policy/textSafety/redaction';
import {
  type DecisionContext,
  type FallbackCause,
  type RetryDecision,
  retryDecisionSchema,
  retryDecisionShape,
} from '../policy/decisions/retryDecision';
import { buildRetryPrompt, DECISION_TOOL_NAME } from '../policy/decisions/retryPrompt';
import { redact } from '../policy/textSafety/redaction';
import { anthropicClient, callTool, firstToolCall, type ModelConfig, readToolCall } from './anthropicCalls';

export type { ModelConfig } from './anthropicCalls';

/** What the model path produced: a valid decision, or the reason the policy must answer instead. */
export type ModelAnswer = (
  | { kind: 'decision'; decision: RetryDecision; model: string; repaired: boolean }
  | { kind: 'fallback'; cause: FallbackCause; detail: string; model: string }
) & { redactions?: RedactionCounts };

// The tool's input schema is derived from the zod schema, so the two cannot drift apart.
const DECISION_TOOL: Anthropic.Tool = {
  name: DECISION_TOOL_NAME,
  description: 'Submit the retry decision for the failed lock acquisition.',
  input_schema: z.toJSONSchema(retryDecisionShape) as Anthropic.Tool.InputSchema,
};

/**
 * Asks an Anthropic model for a retry decision. Errors a retry can fix are rethrown as retryable
 * activity failures, so Temporal is the one owner of retrying (see anthropicCalls). An invalid
 * answer gets exactly one repair request that quotes the validation error; errors a retry cannot fix
 * and a second invalid answer return a fallback with its cause.
 */
export function createAnthropicDecider(config: ModelConfig) {
  const client = anthropicClient(config);

  // The reply, or the fallback a rejected request calls for (a retryable error is thrown).
  async function ask(
    model: string,
    messages: Anthropic.MessageParam[],
    system: string,
  ): Promise<{ reply: unknown } | ModelAnswer> {
    const sent = await callTool(client, {
      model,
      maxTokens: config.maxTokens,
      system,
      messages,
      tool: DECISION_TOOL,
    });
    if ('reply' in sent) return sent;
    return { kind: 'fallback', cause: 'model-request-rejected', detail: `HTTP ${sent.rejected}`, model };
  }

  // One request, and at most one repair request quoting the validation problem.
  async function askWithRepair(
    model: string,
    prompt: ReturnType<typeof buildRetryPrompt>,
  ): Promise<ModelAnswer> {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: prompt.user }];
    const first = await ask(model, messages, prompt.system);
    if (!('reply' in first)) return first;
    const firstRead = readDecision(first.reply);
    if (firstRead.ok) return { kind: 'decision', decision: firstRead.decision, model, repaired: false };

    const repair = repairTurn(first.reply, firstRead.problem);
    const second = await ask(model, [...messages, ...repair], prompt.system);
    if (!('reply' in second)) return second;
    const secondRead = readDecision(second.reply);
    if (secondRead.ok) return { kind: 'decision', decision: secondRead.decision, model, repaired: true };
    return { kind: 'fallback', cause: 'invalid-after-repair', detail: secondRead.problem, model };
  }

  return async function decide(ctx: DecisionContext): Promise<ModelAnswer> {
    const model = spansSeveralKeys(ctx.waitForEdges) ? config.largeModel : config.model;
    const prompt = buildRetryPrompt(ctx, config.sensitiveTenants, { monotonicClockMs: performance.now() });
    const answer = await askWithRepair(model, prompt);
    // What comes back is masked as what went in: a tenant the operator listed never reaches a log,
    // the state or the webhook through the model's words (the decision activity redacts the rest).
    const masked = (text: string) => redact(text, config.sensitiveTenants).text;
    if (answer.kind === 'decision')
      return {
        ...answer,
        decision: {
          ...answer.decision,
          explanation: masked(answer.decision.explanation),
          escalation_reason:
            answer.decision.escalation_reason === null ? null : masked(answer.decision.escalation_reason),
        },
        redactions: prompt.redactions,
      };
    return { ...answer, redactions: prompt.redactions };
  };
}

/**
 * Reads the decision out of a reply: exactly one call of the decision tool (see readToolCall) whose
 * input passes the strict decision schema.
 */
export function readDecision(
  reply: unknown,
): { ok: true; decision: RetryDecision } | { ok: false; problem: string } {
  const call = readToolCall(reply, DECISION_TOOL_NAME);
  if (!call.ok) return call;
  const parsed = retryDecisionSchema.safeParse(call.input);
  if (!parsed.success) return { ok: false, problem: describeIssues(parsed.error).join('; ') };
  return { ok: true, decision: parsed.data };
}

// The repair turn quotes the validation problem; it answers the (first) tool call when there was one.
function repairTurn(previous: unknown, problem: string): Anthropic.MessageParam[] {
  const instruction = `That answer was not usable: ${problem}. Call ${DECISION_TOOL_NAME} exactly once with a corrected decision.`;
  const call = firstToolCall(previous);
  if (call && typeof call.id === 'string') {
    return [
      { role: 'assistant', content: [call] },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: call.id, is_error: true, content: instruction }],
      },
    ];
  }
  return [{ role: 'user', content: instruction }];
}
