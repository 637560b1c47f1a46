import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/activity';
import { z } from 'zod';
import {
  type DecisionContext,
  type FallbackCause,
  type RetryDecision,
  retryDecisionSchema,
  retryDecisionShape,
} from '../policy/retryDecision';
import { describeIssues } from '../policy/errors';
import type { RedactionCounts } from '../policy/redaction';
import { buildRetryPrompt, DECISION_TOOL_NAME } from '../policy/retryPrompt';

/** Reviewed configuration of the model path. It holds no lock-service credentials. */
export interface ModelConfig {
  apiKey: string;
  baseURL?: string;
  /** A small, fast model for the common case. */
  model: string;
  /** A larger model for contention that involves several locks (wait-for edges present). */
  largeModel: string;
  timeoutMs: number;
  maxTokens: number;
  /** Tenant identifiers to mask in anything sent to the model. */
  sensitiveTenants?: string[];
}

/** What the model path produced: a valid decision, or the reason the policy must answer instead. */
export type ModelAnswer = (
  | { kind: 'decision'; decision: RetryDecision; model: string; repaired: boolean }
  | { kind: 'fallback'; cause: FallbackCause; detail: string; model: string }
) & { redactions?: RedactionCounts };

/** Error types that Temporal's activity retry policy backs off on (bounded by the workflow). */
export const MODEL_RETRYABLE_ERRORS = ['ModelRateLimited', 'ModelOverloaded', 'ModelUnavailable'] as const;

// The tool's input schema is derived from the zod schema, so the two cannot drift apart.
const DECISION_TOOL: Anthropic.Tool = {
  name: DECISION_TOOL_NAME,
  description: 'Submit the retry decision for the failed lock acquisition.',
  input_schema: z.toJSONSchema(retryDecisionShape) as Anthropic.Tool.InputSchema,
};

/**
 * Asks an Anthropic model for a retry decision. The SDK never retries (`maxRetries: 0`): errors a
 * retry can fix are rethrown as retryable activity failures, so Temporal is the one owner of
 * retrying. An invalid answer gets exactly one repair request that quotes the validation error;
 * errors a retry cannot fix and a second invalid answer return a fallback with its cause.
 */
export function createAnthropicDecider(config: ModelConfig) {
  const client = new Anthropic({
    apiKey: config.apiKey,
    baseURL: config.baseURL,
    maxRetries: 0,
    timeout: config.timeoutMs,
  });

  async function ask(
    model: string,
    messages: Anthropic.MessageParam[],
    system: string,
  ): Promise<Anthropic.Message | ModelAnswer> {
    try {
      return await client.messages.create({
        model,
        max_tokens: config.maxTokens,
        system,
        messages,
        tools: [DECISION_TOOL],
        tool_choice: { type: 'tool', name: DECISION_TOOL_NAME },
      });
    } catch (error) {
      return classify(error, model);
    }
  }

  // One request, and at most one repair request quoting the validation problem.
  async function askWithRepair(
    model: string,
    prompt: ReturnType<typeof buildRetryPrompt>,
  ): Promise<ModelAnswer> {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: prompt.user }];
    const first = await ask(model, messages, prompt.system);
    if (!('content' in first)) return first;
    const firstRead = readDecision(first);
    if (firstRead.ok) return { kind: 'decision', decision: firstRead.decision, model, repaired: false };

    const second = await ask(model, [...messages, ...repairTurn(first, firstRead.problem)], prompt.system);
    if (!('content' in second)) return second;
    const secondRead = readDecision(second);
    if (secondRead.ok) return { kind: 'decision', decision: secondRead.decision, model, repaired: true };
    return { kind: 'fallback', cause: 'invalid-after-repair', detail: secondRead.problem, model };
  }

  return async function decide(ctx: DecisionContext): Promise<ModelAnswer> {
    const model = ctx.waitForEdges.length > 0 ? config.largeModel : config.model;
    const prompt = buildRetryPrompt(ctx, config.sensitiveTenants);
    const answer = await askWithRepair(model, prompt);
    return { ...answer, redactions: prompt.redactions };
  };
}

/** Reads the decision out of a response: only the forced tool call counts; text around it does not. */
export function readDecision(
  message: Anthropic.Message,
): { ok: true; decision: RetryDecision } | { ok: false; problem: string } {
  if (message.stop_reason === 'max_tokens')
    return { ok: false, problem: 'the answer was cut off at max_tokens' };
  if (message.stop_reason === 'refusal') return { ok: false, problem: 'the model declined to answer' };
  const call = message.content.find(
    (b): b is Anthropic.ToolUseBlock => b.type === 'tool_use' && b.name === DECISION_TOOL_NAME,
  );
  if (!call)
    return {
      ok: false,
      problem: `no ${DECISION_TOOL_NAME} tool call in the answer (content: ${message.content.map((b) => b.type).join(', ') || 'empty'})`,
    };
  const parsed = retryDecisionSchema.safeParse(call.input);
  if (!parsed.success) {
    return {
      ok: false,
      problem: describeIssues(parsed.error).join('; '),
    };
  }
  return { ok: true, decision: parsed.data };
}

// The repair turn quotes the validation problem; it answers the tool call when there was one.
function repairTurn(previous: Anthropic.Message, problem: string): Anthropic.MessageParam[] {
  const instruction = `That answer was not usable: ${problem}. Call ${DECISION_TOOL_NAME} again with a corrected decision.`;
  const call = previous.content.find((b) => b.type === 'tool_use');
  if (call) {
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

function classify(error: unknown, model: string): ModelAnswer {
  if (error instanceof Anthropic.APIConnectionError) {
    const what = error instanceof Anthropic.APIConnectionTimeoutError ? 'timed out' : 'connection failed';
    throw ApplicationFailure.create({ message: `model request ${what}`, type: 'ModelUnavailable' });
  }
  if (error instanceof Anthropic.APIError && typeof error.status === 'number') {
    if (error.status === 429) {
      const retryAfterS = Number(error.headers?.get('retry-after'));
      throw ApplicationFailure.create({
        message: 'model rate limited',
        type: 'ModelRateLimited',
        nextRetryDelay:
          Number.isFinite(retryAfterS) && retryAfterS > 0 ? Math.min(retryAfterS, 60) * 1000 : undefined,
      });
    }
    if (error.status === 529)
      throw ApplicationFailure.create({ message: 'model overloaded (529)', type: 'ModelOverloaded' });
    if (error.status >= 500)
      throw ApplicationFailure.create({
        message: `model server error (${error.status})`,
        type: 'ModelUnavailable',
      });
    // 400, 401, 403, 404, 413, 422: the same request would fail the same way.
    return { kind: 'fallback', cause: 'model-request-rejected', detail: `HTTP ${error.status}`, model };
  }
  throw error;
}
