import Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { describeIssues } from '../policy/errors';
import { BRIEFING_TOOL_NAME, briefingDraftSchema, type DraftRequest } from '../policy/postmortem/modelDraft';
import { type ModelConfig, rejectedStatus } from './anthropicDecider';
import type { DraftAnswer } from './briefingActivities';

const BRIEFING_TOOL: Anthropic.Tool = {
  name: BRIEFING_TOOL_NAME,
  description: 'Submit the post-mortem briefing email, section by section.',
  input_schema: z.toJSONSchema(briefingDraftSchema) as Anthropic.Tool.InputSchema,
};

const replyShape = z.looseObject({ content: z.array(z.looseObject({ type: z.string() })) });

/**
 * Drafts a briefing with the larger model, from the redacted facts only. Exactly one call of the
 * briefing tool, whose input passes the strict schema, is a draft; anything else is an invalid draft
 * (the template answers). Retryable API errors are thrown for Temporal; rejected requests fall back.
 */
export function createAnthropicDrafter(config: ModelConfig) {
  const client = new Anthropic({
    apiKey: config.apiKey,
    baseURL: config.baseURL,
    maxRetries: 0,
    timeout: config.timeoutMs,
  });
  return async function draft(request: DraftRequest): Promise<DraftAnswer> {
    let reply: unknown;
    try {
      reply = await client.messages.create({
        model: config.largeModel,
        max_tokens: Math.max(config.maxTokens, 2_048),
        system: request.system,
        messages: [{ role: 'user', content: request.facts }],
        tools: [BRIEFING_TOOL],
        tool_choice: { type: 'tool', name: BRIEFING_TOOL_NAME, disable_parallel_tool_use: true },
      });
    } catch (error) {
      const status = rejectedStatus(error);
      if (status !== undefined)
        return { kind: 'none', cause: 'model-request-rejected', detail: `HTTP ${status}` };
      return { kind: 'none', cause: 'invalid-draft', detail: 'the reply could not be read' };
    }
    const message = replyShape.safeParse(reply);
    if (!message.success)
      return { kind: 'none', cause: 'invalid-draft', detail: 'the reply is not a Messages API response' };
    const calls = message.data.content.filter((b) => b.type === 'tool_use' && b.name === BRIEFING_TOOL_NAME);
    if (calls.length !== 1)
      return {
        kind: 'none',
        cause: 'invalid-draft',
        detail: `${calls.length} ${BRIEFING_TOOL_NAME} calls; exactly one is expected`,
      };
    const parsed = briefingDraftSchema.safeParse(calls[0]!.input);
    if (!parsed.success)
      return { kind: 'none', cause: 'invalid-draft', detail: describeIssues(parsed.error).join('; ') };
    return { kind: 'draft', draft: parsed.data, model: config.largeModel };
  };
}
