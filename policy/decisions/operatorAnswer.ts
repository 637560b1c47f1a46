// The operator's answer to an escalation, and its check. Workflow code loads this module only when an
// answer arrives (see LockSession), so a session that never escalates never evaluates zod.
import { z } from 'zod';
import { describeIssues } from '../errors';
import type { SessionPhase } from '../sessionModel/sessionPhases';

/** An operator's answer to an escalation: retry with more budget, or abandon. */
export const operatorDecisionSchema = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('retry'),
    extraRetries: z.number().int().min(1).max(1_000).default(5),
    extraWaitMs: z
      .number()
      .int()
      .min(1_000)
      .max(24 * 60 * 60 * 1000)
      .default(60_000),
    operator: z.string().min(1).max(200),
    reason: z.string().min(1).max(1_000),
  }),
  z.strictObject({
    action: z.literal('abandon'),
    operator: z.string().min(1).max(200),
    reason: z.string().min(1).max(1_000),
  }),
]);
export type OperatorDecision = z.output<typeof operatorDecisionSchema>;
export type OperatorDecisionInput = z.input<typeof operatorDecisionSchema>;

/** An operator's answer, checked against the session it is sent to: usable, or why not. */
type OperatorAnswerCheck = { ok: true; answer: OperatorDecision } | { ok: false; problem: string };

/**
 * Checks an operator's answer before a session acts on it: only a session waiting for an operator
 * takes one, once, and only an answer of the documented shape.
 */
export function checkOperatorAnswer(
  input: unknown,
  phase: SessionPhase,
  alreadyAnswered: boolean,
): OperatorAnswerCheck {
  if (phase !== 'escalated')
    return { ok: false, problem: `the session is ${phase}, not waiting for an operator` };
  if (alreadyAnswered) return { ok: false, problem: 'the escalation has been answered already' };
  const parsed = operatorDecisionSchema.safeParse(input);
  if (!parsed.success) return { ok: false, problem: describeIssues(parsed.error).join('; ') };
  return { ok: true, answer: parsed.data };
}
