// The deny gate: lease actions named in a model's output are refused, whatever the wording.
import { z } from 'zod';
import { describeIssues } from '../errors';
import { fencingTokenSchema } from '../lockContract/lockSchemas';
import { leaseVocabulary } from './leaseVocabulary';
import { redact, redactionTotal } from './redaction';

/** The only lease actions there are. Anything else, however phrased, is not an action. */
const LEASE_ACTIONS = ['renew', 'extend', 'steal', 'release'] as const;
/** Where a request comes from. Only the lock client may ask for a lease action. */
const REQUEST_SOURCES = ['lock_client', 'model_completion', 'drafting_lane', 'operator_ui'] as const;
/** The drafting tasks a model may take on, always over redacted text. */
const DRAFT_TASKS = ['explain_log', 'draft_test', 'draft_briefing'] as const;

const leaseActionRequestSchema = z.strictObject({
  action: z.enum(LEASE_ACTIONS),
  source: z.enum(REQUEST_SOURCES),
  token: fencingTokenSchema,
});
const draftRequestSchema = z.strictObject({ task: z.enum(DRAFT_TASKS), text: z.string() });

/** The gate's answer: admitted, or denied with the reason. */
type GateVerdict = { admitted: true } | { admitted: false; reason: string };

/**
 * Admits a lease action only when it is one of the typed actions, comes from the lock client, and
 * carries a token in the form the lock service issues (digits, non-empty). A paraphrase ("keep the
 * hold alive") is not in the enum, so it fails closed; so does any unknown field.
 */
export function admitLeaseAction(request: unknown): GateVerdict {
  const parsed = leaseActionRequestSchema.safeParse(request);
  if (!parsed.success)
    return {
      admitted: false,
      reason: describeIssues(parsed.error).join('; '),
    };
  if (parsed.data.source !== 'lock_client')
    return { admitted: false, reason: `source ${parsed.data.source} may not take lease actions` };
  return { admitted: true };
}

/**
 * Admits a drafting task only when it is a known task (the typed enum) and its text is already
 * redacted (redaction would find nothing more) and carries no lease vocabulary (leaseVocabulary).
 */
export function admitDraft(request: unknown, sensitiveTenants: readonly string[] = []): GateVerdict {
  const parsed = draftRequestSchema.safeParse(request);
  if (!parsed.success)
    return {
      admitted: false,
      reason: describeIssues(parsed.error).join('; '),
    };
  const left = redactionTotal(redact(parsed.data.text, sensitiveTenants).counts);
  if (left > 0) return { admitted: false, reason: `text is not redacted (${left} item(s) would be removed)` };
  const spoken = leaseVocabulary(parsed.data.text);
  if (spoken)
    return {
      admitted: false,
      // The rule and the position, not the words: a refused text may be a tenant's (seed 003).
      reason: `a draft may not speak of lease actions (rule lease-vocabulary, at word ${spoken.word})`,
    };
  return { admitted: true };
}
