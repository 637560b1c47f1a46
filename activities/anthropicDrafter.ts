// The model lane of post-mortem drafting: one call to the larger model, from redacted facts only.
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { describeIssues } from '../policy/errors';
import { BRIEFING_TOOL_NAME, briefingDraftSchema, type DraftRequest } from '../policy/postmortem/modelDraft';
import { anthropicClient, callTool, type ModelConfig, readToolCall } from './anthropicCalls';
import type { DraftAnswer } from './briefingActivities';
import { redact } from '../policy/textSafety/redaction';

const BRIEFING_TOOL: Anthropic.Tool = {
  name: BRIEFING_TOOL_NAME,
  description: 'Submit the post-mortem briefing email, section by section.',
  input_schema: z.toJSONSchema(briefingDraftSchema) as Anthropic.Tool.InputSchema,
};

/**
 * Drafts a briefing with the larger model, from the redacted facts only. Exactly one call of the
 * briefing tool, whose input passes the strict schema, is a draft; anything else is an invalid draft
 * (the template answers). Retryable API errors are thrown for Temporal; rejected requests fall back.
 */
export function createAnthropicDrafter(config: ModelConfig) {
  const client = anthropicClient(config);
  // The facts were redacted in the workflow, which cannot know the operator's tenant list: masked here,
  // where the model is called, and in the draft that comes back, as the retry prompt is.
  const masked = (text: string) => redact(text, config.sensitiveTenants).text;
  return async function draft(request: DraftRequest): Promise<DraftAnswer> {
    const sent = await callTool(client, {
      model: config.largeModel,
      maxTokens: Math.max(config.maxTokens, 2_048),
      system: request.system,
      messages: [{ role: 'user', content: masked(request.facts) }],
      tool: BRIEFING_TOOL,
    });
    if ('rejected' in sent)
      return { kind: 'none', cause: 'model-request-rejected', detail: `HTTP ${sent.rejected}` };
    const call = readToolCall(sent.reply, BRIEFING_TOOL_NAME);
    if (!call.ok) return { kind: 'none', cause: 'invalid-draft', detail: call.problem };
    const parsed = briefingDraftSchema.safeParse(call.input);
    if (!parsed.success)
      return { kind: 'none', cause: 'invalid-draft', detail: describeIssues(parsed.error).join('; ') };
    return { kind: 'draft', draft: maskStrings(parsed.data, masked), model: config.largeModel };
  };
}

// Every string of a draft, masked: the draft is shown, stored and checked as the model wrote it, less
// what the operator's tenant list names.
function maskStrings<T>(value: T, mask: (text: string) => string): T {
  if (typeof value === 'string') return mask(value) as T;
  if (Array.isArray(value)) return value.map((v) => maskStrings(v, mask)) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskStrings(v, mask)])) as T;
  return value;
}
