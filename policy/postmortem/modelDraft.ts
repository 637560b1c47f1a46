// A model's draft of a briefing: the tool it must call and the schema its draft must pass.
import { z } from 'zod';
import { redact } from '../textSafety/redaction';
import type { Briefing, BriefingFacts } from './briefing';
import {
  anatomySentence,
  BRIEFING_SECTIONS,
  impactSentences,
  MAX_BRIEFING_WORDS,
  mechanismSentence,
  regressionAssertions,
} from './briefing';
import { patchSentence } from './patchDescription';
import { abortCriteria, rollbackCommand } from './releaseGates';
import { latencyThroughputVerdict } from './patchEvidence';

/** The name of the tool the model must call with its draft. */
export const BRIEFING_TOOL_NAME = 'submit_briefing';

/** A model's draft, exactly as it must answer: the subject and the four sections; nothing else. */
export const briefingDraftSchema = z.strictObject({
  subject: z.string().min(1).max(300),
  executive_context: z.string().min(1),
  concurrency_anomaly_analysis: z.string().min(1),
  patch_validation_evidence: z.string().min(1),
  deployment_checklist: z.string().min(1),
});
export type BriefingDraft = z.infer<typeof briefingDraftSchema>;

/** A draft as a briefing, its sections under their titles. */
export function draftToBriefing(draft: BriefingDraft): Briefing {
  const bodies = [
    draft.executive_context,
    draft.concurrency_anomaly_analysis,
    draft.patch_validation_evidence,
    draft.deployment_checklist,
  ];
  return {
    subject: draft.subject,
    sections: BRIEFING_SECTIONS.map((title, i) => ({ title, body: bodies[i]! })),
  };
}

/** What the drafting model is given: the instructions, and the facts as redacted text only. */
export interface DraftRequest {
  system: string;
  facts: string;
}

const SYSTEM = `You are a senior DevSecOps advisory architect specializing in transactional consistency and concurrency debugging. You draft a post-mortem briefing email about a concurrency incident on a distributed lock, for the client's engineering lead named in the facts, signed by the advisory firm named there. Write only from the facts given; do not invent events, numbers or names.

Call the ${BRIEFING_TOOL_NAME} tool exactly once with: subject (the system name, the severity and the patch's readiness), executive_context (greet the engineering lead by name, then the problem and its verified impact: what exists, what was refused, what was lost), concurrency_anomaly_analysis (a sentence naming the clock the times are on, then the timeline step by step, each step on its own line starting "- T+<seconds> s" and naming its thread (Thread A, Thread B or another exactly so), then the shared state and the non-atomic step), patch_validation_evidence (what the patch is, the tests and figures as given, the latency and throughput verdict quoted word for word as the facts give it, the regression assertions), deployment_checklist (the canary steps and soak, every abort criterion with its number, metric and window, each on its own line starting "Abort", the rollback command, the decision asked of the reader, then a sign-off from the firm).

Rules: at most ${MAX_BRIEFING_WORDS} words in all. Never recommend a global lock, a wider lock or a blocking operation. Speak of taking, keeping and letting go of the lock; do not copy identifiers that are masked in the facts.`;

/** The drafting request: every fact the template uses, passed through redact() as one text. */
export function draftRequest(facts: BriefingFacts): DraftRequest {
  const { timeline, evidence, gates } = facts;
  const rollback = rollbackCommand(gates);
  const lines = [
    `System: ${facts.job}; lock key: ${timeline.key}; from ${facts.firm}${facts.owner ? ` (owner: ${facts.owner})` : ''} to ${facts.stakeholder}.`,
    `Mechanism: ${mechanismSentence(timeline)}`,
    `Verified impact: ${impactSentences(timeline)}`,
    anatomySentence(timeline),
    `Threads: ${timeline.threads.map((t) => `${t.label} is ${t.session}`).join('; ') || 'none'}.`,
    "Timeline (offsets from the first event, on the lock service's clock):",
    ...timeline.steps.map((s) => `- T+${(s.offsetMs / 1000).toFixed(3)} s ${s.text}`),
    patchSentence(facts.patch),
    `Evidence: ${evidence.tests ? `${evidence.tests.total} tests, ${evidence.tests.passed} passed, ${evidence.tests.failed} failed` : 'no test report'}.`,
    ...evidence.figures.map((f) => `- ${f}`),
    `Quote word for word: ${latencyThroughputVerdict(evidence)}`,
    'Regression assertions:',
    ...regressionAssertions(timeline).map((a) => `- ${a}`),
    `Canary steps: ${gates.canaryPercent.join('%, ')}%, ${gates.soakMinutes} minutes each.`,
    ...abortCriteria(gates).map((c) => `- Abort if ${c}.`),
    rollback ? `Automated rollback command: ${rollback}` : 'No rollback target was given.',
  ];
  return { system: SYSTEM, facts: redact(lines.join('\n')).text };
}
