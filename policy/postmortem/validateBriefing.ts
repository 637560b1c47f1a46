// The rules a briefing must pass before it is sent; a draft that breaks one gives way to the
// template.
import { admitDraft } from '../textSafety/denyGate';
import { leaseVocabulary } from '../textSafety/leaseVocabulary';
import { redact } from '../textSafety/redaction';
import { BRIEFING_SECTIONS, type Briefing, briefingWords, MAX_BRIEFING_WORDS } from './briefing';
import type { Timeline } from './timeline';
import { latencyThroughputVerdict, type PatchEvidence } from './patchEvidence';

/** The rules a briefing must pass, by name; a model's draft that breaks one falls back to the template. */
export const BRIEFING_RULES = [
  'sections',
  'length',
  'threads',
  'abort-criteria',
  'no-global-lock',
  'no-secrets',
  'lease-vocabulary',
  'draft-gate',
  'self-review',
] as const;
type BriefingRule = (typeof BRIEFING_RULES)[number];

/** One broken rule and what broke it. */
interface BriefingProblem {
  rule: BriefingRule;
  problem: string;
}

// Advice the briefing must never give: a lock wider than the work, or a step that blocks everyone.
const GLOBAL_LOCK_ADVICE =
  /\b(global|cluster-wide|process-wide)\s+(lock|mutex|semaphore)|\bserial(ize|ise)\s+(all|every)|\bstop[- ]the[- ]world\b|\bsingle[- ]threaded\b|\bblocking\s+(lock|call|operation)/i;

/**
 * Checks a briefing: the subject and the four sections, present and in order; at most 650 words;
 * every thread of the timeline named; at least one abort criterion with a number; no advice of a
 * global lock or a blocking operation; no lease vocabulary (policy/textSafety/leaseVocabulary.ts). A model's
 * draft must also carry no token, time or credential and pass the deny gate as a `draft_briefing`. Returns every problem found (empty: valid).
 */
export function validateBriefing(
  briefing: Briefing,
  timeline: Timeline,
  options: { modelDrafted: boolean; evidence?: PatchEvidence },
): BriefingProblem[] {
  const problems: BriefingProblem[] = [];
  const titles = briefing.sections.map((s) => s.title);
  if (!briefing.subject.trim()) problems.push({ rule: 'sections', problem: 'the subject line is empty' });
  if (titles.join('|') !== BRIEFING_SECTIONS.join('|')) {
    const missing = BRIEFING_SECTIONS.filter((t) => !titles.includes(t));
    problems.push({
      rule: 'sections',
      problem: missing.length
        ? `missing section(s): ${missing.join(', ')}`
        : `sections out of order: ${titles.join(', ')}`,
    });
  }
  const words = briefingWords(briefing);
  if (words > MAX_BRIEFING_WORDS)
    problems.push({ rule: 'length', problem: `${words} words, more than ${MAX_BRIEFING_WORDS}` });

  const analysis = briefing.sections.find((s) => s.title === 'Concurrency Anomaly Analysis')?.body ?? '';
  const unnamed = timeline.threads.filter((t) => !analysis.includes(t.label)).map((t) => t.label);
  if (unnamed.length)
    problems.push({ rule: 'threads', problem: `the analysis does not name ${unnamed.join(', ')}` });

  const checklist =
    briefing.sections.find((s) => s.title === 'Deployment Checklist & Guardrails')?.body ?? '';
  const quantified = checklist.split('\n').some((line) => /\babort/i.test(line) && /\d/.test(line));
  if (!quantified)
    problems.push({ rule: 'abort-criteria', problem: 'no abort criterion with a number in the checklist' });

  const all = [briefing.subject, ...briefing.sections.map((s) => `${s.title}\n${s.body}`)].join('\n');
  const advice = GLOBAL_LOCK_ADVICE.exec(all);
  if (advice)
    problems.push({
      rule: 'no-global-lock',
      problem: `advises a global lock or a blocking step ("${advice[0]}")`,
    });

  // The template speaks of taking, keeping and letting go too (a model's draft passes the whole gate).
  const spoken = options.modelDrafted ? null : leaseVocabulary(all);
  if (spoken)
    problems.push({
      rule: 'lease-vocabulary',
      problem: `speaks of a lease action (at word ${spoken.word})`,
    });
  if (options.modelDrafted) {
    const { counts } = redact(all);
    const secrets = counts.token + counts.credential + counts.connectionString + counts.tenant;
    if (secrets > 0)
      problems.push({ rule: 'no-secrets', problem: `${secrets} token(s) or credential(s) in the draft` });
    const verdict = admitDraft({ task: 'draft_briefing', text: all });
    if (!verdict.admitted) problems.push({ rule: 'draft-gate', problem: verdict.reason });
  }
  for (const problem of selfReview(briefing, options.evidence, timeline.steps.length > 0))
    problems.push({ rule: 'self-review', problem });
  return problems;
}

/**
 * Seed 004's three self-review questions, answered from the briefing's own content: every timeline
 * step has a time on one clock and a thread; every abort criterion has a metric, a threshold and a
 * window, and there is a target to roll back to; the latency and throughput verdict is the one the
 * evidence's before/after figures give (or says none were given). Returns what cannot be answered.
 */
export function selfReview(briefing: Briefing, evidence?: PatchEvidence, hasSteps = true): string[] {
  const body = (title: string) => briefing.sections.find((s) => s.title === title)?.body ?? '';
  const problems: string[] = [];

  const analysis = body('Concurrency Anomaly Analysis');
  if (!/\bclock\b/i.test(analysis)) problems.push('the analysis does not say which clock its times are on');
  const steps = analysis.split('\n').filter((line) => /^\s*(\d+\.|-)\s/.test(line) || /\bT\+/.test(line));
  if (hasSteps && !steps.length) problems.push('the analysis has no timeline steps');
  for (const [i, step] of steps.entries()) {
    const missing = [
      /\bT\+\d+(\.\d+)?\s?s\b/.test(step) ? null : 'a time (T+seconds)',
      /\bThread [A-Z0-9]+\b/.test(step) ? null : 'a thread',
    ].filter(Boolean);
    if (missing.length) problems.push(`timeline step ${i + 1} has no ${missing.join(' and no ')}`);
  }

  const checklist = body('Deployment Checklist & Guardrails');
  // An abort criterion is a line that starts with "Abort" (the template's, and what a draft is asked for).
  const criteria = checklist.split('\n').filter((line) => /^\s*(-\s*)?abort\b/i.test(line));
  for (const [i, line] of criteria.entries()) {
    const missing = [
      /lockwarden_[a-z_]+|fenced write log/.test(line) ? null : 'a metric',
      /\d/.test(line) ? null : 'a threshold',
      /\bover (its )?\d+[- ]?min/.test(line) ? null : 'a window',
    ].filter(Boolean);
    if (missing.length) problems.push(`abort criterion ${i + 1} has no ${missing.join(', no ')}`);
  }
  if (!/set-current-version\b[^\n]*--build-id \S+/.test(checklist))
    problems.push('the checklist names no rollback target (a deployment and the build before the patch)');

  const verdict = evidence ? latencyThroughputVerdict(evidence) : null;
  const evidenceText = body('Patch Validation Evidence');
  if (verdict ? !evidenceText.includes(verdict) : !/Latency and throughput verdict: /.test(evidenceText))
    problems.push(
      verdict
        ? `the evidence does not give the latency and throughput verdict its figures compute ("${verdict.slice(0, 60)}...")`
        : 'the evidence gives no latency and throughput verdict',
    );
  return problems;
}
