// What the decider and the drafter share of the Messages API: the client, one forced tool call per
// request, how API errors become retryable failures or rejections, and the reading of the reply.
import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/activity';
import { z } from 'zod';
import { redact } from '../policy/textSafety/redaction';
import { untrustedText } from '../policy/textSafety/untrustedText';

/** Reviewed configuration of the model path. It holds no lock-service credentials. */
export interface ModelConfig {
  apiKey: string;
  baseURL?: string;
  /** A small, fast model for the common case. */
  model: string;
  /** A larger model for contention that involves several locks (wait-for edges present), and for briefings. */
  largeModel: string;
  timeoutMs: number;
  maxTokens: number;
  /** Tenant identifiers to mask in anything sent to the model. */
  sensitiveTenants?: string[];
}

/** The error types of model calls that Temporal's activity retry policy backs off on (bounded by the workflow). */
export const MODEL_RETRYABLE_ERRORS = {
  rateLimited: 'ModelRateLimited',
  overloaded: 'ModelOverloaded',
  unavailable: 'ModelUnavailable',
} as const;

/**
 * A Messages API client that never retries (`maxRetries: 0`): errors a retry can fix are rethrown as
 * retryable activity failures, so Temporal is the one owner of retrying.
 */
export function anthropicClient(config: ModelConfig): Anthropic {
  return new Anthropic({
    apiKey: config.apiKey,
    baseURL: config.baseURL,
    maxRetries: 0,
    timeout: config.timeoutMs,
  });
}

/** One request that must answer with exactly one call of `tool`. */
interface ToolRequest {
  model: string;
  maxTokens: number;
  system: string;
  messages: Anthropic.MessageParam[];
  tool: Anthropic.Tool;
}

/**
 * Sends a request forced to call its tool once. Answers the reply as the SDK returned it (read it
 * with readToolCall), or the HTTP status of a request the API rejected. A retryable API error is
 * thrown for Temporal (see rejectedStatus); anything else thrown (a body that is not JSON, a reply
 * the SDK cannot read) is a reply that could not be read, an invalid answer like any other.
 */
export async function callTool(
  client: Anthropic,
  request: ToolRequest,
): Promise<{ reply: unknown } | { rejected: number }> {
  try {
    const reply: unknown = await client.messages.create({
      model: request.model,
      max_tokens: request.maxTokens,
      system: request.system,
      messages: request.messages,
      tools: [request.tool],
      // One call of the one tool: a second call in the same reply is refused anyway (readToolCall).
      tool_choice: { type: 'tool', name: request.tool.name, disable_parallel_tool_use: true },
    });
    return { reply };
  } catch (error) {
    const status = rejectedStatus(error);
    return status === undefined ? { reply: new UnreadableReply(error) } : { rejected: status };
  }
}

/**
 * For an error of a Messages API call: throws the retryable activity failure that a rate limit,
 * overload, server error, time-out or dropped connection calls for; returns the HTTP status of a
 * request the API rejected (the same request would fail the same way); undefined for anything else.
 */
function rejectedStatus(error: unknown): number | undefined {
  if (error instanceof Anthropic.APIConnectionError) {
    const what = error instanceof Anthropic.APIConnectionTimeoutError ? 'timed out' : 'connection failed';
    throw ApplicationFailure.create({
      message: `model request ${what}`,
      type: MODEL_RETRYABLE_ERRORS.unavailable,
    });
  }
  if (!(error instanceof Anthropic.APIError) || typeof error.status !== 'number') return undefined;
  if (error.status === 429) {
    const retryAfterS = Number(error.headers?.get('retry-after'));
    throw ApplicationFailure.create({
      message: 'model rate limited',
      type: MODEL_RETRYABLE_ERRORS.rateLimited,
      nextRetryDelay:
        Number.isFinite(retryAfterS) && retryAfterS > 0 ? Math.min(retryAfterS, 60) * 1000 : undefined,
    });
  }
  if (error.status === 529)
    throw ApplicationFailure.create({
      message: 'model overloaded (529)',
      type: MODEL_RETRYABLE_ERRORS.overloaded,
    });
  if (error.status >= 500)
    throw ApplicationFailure.create({
      message: `model server error (${error.status})`,
      type: MODEL_RETRYABLE_ERRORS.unavailable,
    });
  return error.status;
}

/** A reply the SDK could not read (what it threw), kept for readToolCall to describe. */
class UnreadableReply {
  constructor(readonly error: unknown) {}
}

// What a reply must look like before its content is read: a Messages API message, loosely.
const replyShape = z.looseObject({
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullable().optional(),
});

/**
 * Reads the one call of `toolName` out of a reply. Only a reply that is exactly one call of that tool
 * with an object input counts; anything else (no call, two calls, another tool, text only, a cut-off
 * or refused answer, a reply that is not a Messages response) is a problem, described without more
 * than a short, redacted excerpt of what the server sent.
 */
export function readToolCall(
  reply: unknown,
  toolName: string,
): { ok: true; input: object; call: Anthropic.ToolUseBlock } | { ok: false; problem: string } {
  const message = replyShape.safeParse(reply);
  if (!message.success) return { ok: false, problem: describeUnreadable(reply) };
  const { content, stop_reason } = message.data;
  if (stop_reason === 'max_tokens') return { ok: false, problem: 'the answer was cut off at max_tokens' };
  if (stop_reason === 'refusal') return { ok: false, problem: 'the model declined to answer' };
  const calls = content.filter((b) => b.type === 'tool_use');
  if (calls.length === 0)
    return {
      ok: false,
      problem: `no ${toolName} tool call in the answer (content: ${content.map((b) => excerpt(b.type)).join(', ') || 'empty'})`,
    };
  if (calls.length > 1)
    return {
      ok: false,
      problem: `${calls.length} tool calls in the answer; exactly one ${toolName} call is expected`,
    };
  const call = calls[0]!;
  if (call.name !== toolName)
    return { ok: false, problem: `a call of tool ${excerpt(String(call.name))}, not ${toolName}` };
  if (call.input === null || typeof call.input !== 'object' || Array.isArray(call.input))
    return { ok: false, problem: 'the tool call input is not an object' };
  return { ok: true, input: call.input, call: call as unknown as Anthropic.ToolUseBlock };
}

/** The first tool call of a reply, if it has one: what a repair turn answers. */
export function firstToolCall(reply: unknown): Anthropic.ToolUseBlock | undefined {
  const read = replyShape.safeParse(reply);
  return read.success
    ? (read.data.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock | undefined)
    : undefined;
}

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
