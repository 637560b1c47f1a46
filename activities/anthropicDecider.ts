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
import { redact, type RedactionCounts } from '../policy/redaction';
import { untrustedText } from '../policy/untrustedText';
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

  // The reply as the SDK returned it (read and checked by readDecision), or the answer an API error
  // calls for. Anything else thrown (a body that is not JSON, a reply the SDK cannot read) is a reply
  // that could not be read: an invalid answer like any other.
  async function ask(
    model: string,
    messages: Anthropic.MessageParam[],
    system: string,
  ): Promise<{ reply: unknown } | ModelAnswer> {
    try {
      const reply: unknown = await client.messages.create({
        model,
        max_tokens: config.maxTokens,
        system,
        messages,
        tools: [DECISION_TOOL],
        // One call of the one tool: a second call in the same reply is refused anyway (readDecision).
        tool_choice: { type: 'tool', name: DECISION_TOOL_NAME, disable_parallel_tool_use: true },
      });
      return { reply };
    } catch (error) {
      return classify(error, model) ?? { reply: new UnreadableReply(error) };
    }
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
    const model = ctx.waitForEdges.length > 0 ? config.largeModel : config.model;
    const prompt = buildRetryPrompt(ctx, config.sensitiveTenants);
    const answer = await askWithRepair(model, prompt);
    return { ...answer, redactions: prompt.redactions };
  };
}

/** A reply the SDK could not read (what it threw), kept for readDecision to describe. */
class UnreadableReply {
  constructor(readonly error: unknown) {}
}

// What a reply must look like before its content is read: a Messages API message, loosely.
const replyShape = z.looseObject({
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullable().optional(),
});

/** A short, redacted excerpt of what a server sent, for a recorded cause: never the whole of it. */
function excerpt(text: string): string {
  return JSON.stringify(untrustedText(redact(text).text, 60));
}

/** Why a reply is not a Messages API message: its kind and a short, redacted excerpt. */
function describeUnreadable(reply: unknown): string {
  if (reply instanceof UnreadableReply) {
    const error = reply.error;
    const name = error instanceof Error ? error.name : typeof error;
    return `the reply could not be read (${name}: ${excerpt(error instanceof Error ? error.message : String(error))})`;
  }
  if (typeof reply === 'string')
    return `the reply is not a Messages API response but text: ${excerpt(reply)}`;
  if (reply === null || typeof reply !== 'object')
    return `the reply is not a Messages API response (${String(reply)})`;
  const content = (reply as { content?: unknown }).content;
  return content === undefined
    ? 'the reply is not a Messages API response (no content)'
    : `the reply's content is ${content === null ? 'null' : typeof content}, not a list of blocks`;
}

/**
 * Reads the decision out of a reply. Only a reply that is exactly one call of the decision tool with
 * an object input counts; anything else (no call, two calls, another tool, text only, a reply that is
 * not a Messages response) is an invalid answer, described without more than a short excerpt.
 */
export function readDecision(
  reply: unknown,
): { ok: true; decision: RetryDecision } | { ok: false; problem: string } {
  const message = replyShape.safeParse(reply);
  if (!message.success) return { ok: false, problem: describeUnreadable(reply) };
  const { content, stop_reason } = message.data;
  if (stop_reason === 'max_tokens') return { ok: false, problem: 'the answer was cut off at max_tokens' };
  if (stop_reason === 'refusal') return { ok: false, problem: 'the model declined to answer' };
  const calls = content.filter((b) => b.type === 'tool_use');
  if (calls.length === 0)
    return {
      ok: false,
      problem: `no ${DECISION_TOOL_NAME} tool call in the answer (content: ${content.map((b) => excerpt(b.type)).join(', ') || 'empty'})`,
    };
  if (calls.length > 1)
    return {
      ok: false,
      problem: `${calls.length} tool calls in the answer; exactly one ${DECISION_TOOL_NAME} call is expected`,
    };
  const call = calls[0]!;
  if (call.name !== DECISION_TOOL_NAME)
    return { ok: false, problem: `a call of tool ${excerpt(String(call.name))}, not ${DECISION_TOOL_NAME}` };
  if (call.input === null || typeof call.input !== 'object' || Array.isArray(call.input))
    return { ok: false, problem: 'the tool call input is not an object' };
  const parsed = retryDecisionSchema.safeParse(call.input);
  if (!parsed.success) {
    return {
      ok: false,
      problem: describeIssues(parsed.error).join('; '),
    };
  }
  return { ok: true, decision: parsed.data };
}

// The repair turn quotes the validation problem; it answers the (first) tool call when there was one.
function repairTurn(previous: unknown, problem: string): Anthropic.MessageParam[] {
  const instruction = `That answer was not usable: ${problem}. Call ${DECISION_TOOL_NAME} exactly once with a corrected decision.`;
  const read = replyShape.safeParse(previous);
  const call = read.success
    ? (read.data.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock | undefined)
    : undefined;
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

/**
 * The answer an API error calls for: a retryable failure (thrown, for Temporal to back off on) or a
 * fallback; undefined for anything that is not an API error (the reply could not be read).
 */
function classify(error: unknown, model: string): ModelAnswer | undefined {
  const status = rejectedStatus(error);
  return status === undefined
    ? undefined
    : { kind: 'fallback', cause: 'model-request-rejected', detail: `HTTP ${status}`, model };
}

/**
 * For an error of a Messages API call: throws the retryable activity failure that a rate limit,
 * overload, server error, time-out or dropped connection calls for; returns the HTTP status of a
 * request the API rejected (the same request would fail the same way); undefined for anything else.
 */
export function rejectedStatus(error: unknown): number | undefined {
  if (error instanceof Anthropic.APIConnectionError) {
    const what = error instanceof Anthropic.APIConnectionTimeoutError ? 'timed out' : 'connection failed';
    throw ApplicationFailure.create({ message: `model request ${what}`, type: 'ModelUnavailable' });
  }
  if (!(error instanceof Anthropic.APIError) || typeof error.status !== 'number') return undefined;
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
  return error.status;
}
