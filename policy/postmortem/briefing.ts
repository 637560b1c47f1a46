import { describeCycle } from '../waitForGraph';
import { abortCriteria, type ReleaseGates } from './releaseGates';
import type { PatchEvidence } from './patchEvidence';
import type { Mechanism, Timeline } from './timeline';

/** The sections of a briefing, in the order they must appear after the subject line. */
export const BRIEFING_SECTIONS = [
  'Executive Context',
  'Concurrency Anomaly Analysis',
  'Patch Validation Evidence',
  'Deployment Checklist & Guardrails',
] as const;
export type BriefingSection = (typeof BRIEFING_SECTIONS)[number];

/** The briefing's length limit, subject included. */
export const MAX_BRIEFING_WORDS = 650;

/** A briefing email: a subject line and the four sections. */
export interface Briefing {
  subject: string;
  sections: { title: string; body: string }[];
}

/** What a briefing is written from: the template's variables, the timeline, the evidence, the gates. */
export interface BriefingFacts {
  firm: string;
  stakeholder: string;
  /** The impacted workflow or job: the system the subject names. */
  job: string;
  timeline: Timeline;
  evidence: PatchEvidence;
  gates: ReleaseGates;
}

/** Words in a text, as the limit counts them. */
export function wordCount(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** Words in a whole briefing. */
export function briefingWords(briefing: Briefing): number {
  return (
    wordCount(briefing.subject) + briefing.sections.reduce((n, s) => n + wordCount(s.title + ' ' + s.body), 0)
  );
}

const SEVERITY: Record<Mechanism['kind'], string> = {
  'paused-past-lease': 'SEV-2',
  'lock-inversion': 'SEV-2',
  starvation: 'SEV-3',
  none: 'SEV-4',
};

/** Where the patch stands, from its evidence. */
export function patchReadiness(evidence: PatchEvidence): string {
  if (!evidence.tests) return 'patch unverified';
  return evidence.tests.failed > 0 ? 'patch not ready' : 'patch ready for canary';
}

/** The subject line: system, severity, mechanism and patch readiness. */
export function briefingSubject(facts: BriefingFacts): string {
  const what = MECHANISM_TITLE[facts.timeline.mechanism.kind];
  return `[${facts.job}] ${SEVERITY[facts.timeline.mechanism.kind]} ${what} on ${facts.timeline.key}: ${patchReadiness(facts.evidence)}`;
}

const MECHANISM_TITLE: Record<Mechanism['kind'], string> = {
  'paused-past-lease': 'holder paused past its lease',
  'lock-inversion': 'lock inversion',
  starvation: 'starvation behind repeated escalations',
  none: 'concurrency review',
};

/** What the mechanism was, in one or two sentences naming the threads. */
export function mechanismSentence(timeline: Timeline): string {
  const m = timeline.mechanism;
  switch (m.kind) {
    case 'paused-past-lease':
      return (
        `${m.stale.label} held token ${m.staleToken} and went silent past its lease; the lock service let it ` +
        `expire and ${m.next.label} took token ${m.nextToken}. When ${m.stale.label} woke, the token check turned its ` +
        'stale token away: the race was contained, not lost.'
      );
    case 'lock-inversion':
      return `The sessions waited on each other in a cycle (${describeCycle(m.cycle)}), so no wait could end on its own; the harness found the cycle and stopped them${m.escalator ? `, and ${m.escalator} escalated it to on-call` : ''}.`;
    case 'starvation':
      return `${timeline.threads[0]?.label ?? 'One session'} kept waiting and escalated ${m.escalations} times without the key coming free.`;
    case 'none':
      return 'The events show no race, lock inversion or starvation: the sessions took the lock in turn.';
  }
}

/**
 * The deterministic template: the default lane, and the fallback of the model lane. Trims the
 * middle of a long timeline (saying how much) to stay within the word limit.
 */
export function renderBriefing(facts: BriefingFacts): Briefing {
  let steps = facts.timeline.steps;
  for (;;) {
    const briefing = compose(facts, steps, facts.timeline.steps.length - steps.length);
    if (briefingWords(briefing) <= MAX_BRIEFING_WORDS || steps.length <= 4) return briefing;
    const keep = steps.length - 1;
    steps = [...steps.slice(0, Math.ceil(keep / 2)), ...steps.slice(steps.length - Math.floor(keep / 2))];
  }
}

function compose(facts: BriefingFacts, steps: Timeline['steps'], omitted: number): Briefing {
  const { timeline, evidence, gates } = facts;
  const c = timeline.counts;
  const started =
    timeline.startedAt === null ? 'an unknown time' : new Date(timeline.startedAt).toISOString();
  const threads = timeline.threads.map((t) => `${t.label} is ${t.session}`).join('; ');
  const exec = [
    `${facts.stakeholder}, this briefing from ${facts.firm} covers the concurrency incident on ${facts.job} (lock key ${timeline.key}), starting ${started}.`,
    `${c.sessions} session(s) took part; ${c.lostHolds} lost its hold, ${c.refusedWrites} stale write(s) were refused by the fenced resource, and ${c.escalations} escalation(s) reached on-call.`,
    mechanismSentence(timeline),
  ].join(' ');

  const half = Math.ceil(steps.length / 2);
  const lines = steps.map((s, i) => `${i + 1}. ${formatOffset(s.offsetMs)} (${s.clock} clock) ${s.text}`);
  if (omitted > 0) lines.splice(half, 0, `   ... ${omitted} step(s) in between omitted for length ...`);
  const analysis = [
    `${threads || 'No session took the lock'}. Times are from the first event; tokens are the lock service's.`,
    ...lines,
  ].join('\n');

  const t = evidence.tests;
  const evidenceText = [
    t
      ? `Tests: ${t.total} run, ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped (${evidence.source}).`
      : 'No test report was supplied: the patch is unverified until one is.',
    ...evidence.figures.map((f) => `- ${f}`),
    'Regression guards: a unit test of the timeline for this mechanism, an integration test that replays it against the real lock service, and a fuzz test of malformed requests at every backend.',
  ].join('\n');

  const criteria = abortCriteria(gates);
  const checklist = [
    `Canary: ${gates.canaryPercent.map((p) => `${p}%`).join(' -> ')} of workers, each step held ${gates.soakMinutes} minutes before the next.`,
    ...criteria.map((c) => `- Abort the canary and roll back if ${c}.`),
    '- Rollback: return the canary workers to the previous build; sessions in flight continue on their own histories.',
    '- Telemetry: alert on the same thresholds from the worker metrics and the escalation store.',
    "The patch keeps per-key leases, the lock service's tokens and parked waiters; it adds no blocking step and no lock wider than one key.",
  ].join('\n');

  return {
    subject: briefingSubject(facts),
    sections: [
      { title: 'Executive Context', body: exec },
      { title: 'Concurrency Anomaly Analysis', body: analysis },
      { title: 'Patch Validation Evidence', body: evidenceText },
      { title: 'Deployment Checklist & Guardrails', body: checklist },
    ],
  };
}

function formatOffset(ms: number): string {
  return `T+${(ms / 1000).toFixed(3)} s`;
}

/** The briefing as plain text: the subject line, then each section under its title. */
export function briefingText(briefing: Briefing): string {
  return (
    [`Subject: ${briefing.subject}`, ...briefing.sections.map((s) => `${s.title}\n${s.body}`)].join('\n\n') +
    '\n'
  );
}

/** The briefing as Markdown. */
export function briefingMarkdown(briefing: Briefing): string {
  return (
    [`**Subject:** ${briefing.subject}`, ...briefing.sections.map((s) => `## ${s.title}\n\n${s.body}`)].join(
      '\n\n',
    ) + '\n'
  );
}

/** The briefing as an RFC 5322 message: headers (Subject among them), a blank line, the text body. */
export function briefingEmail(briefing: Briefing, meta: { from: string; to: string; date: Date }): string {
  const header = (value: string) => value.replace(/[\r\n]+/g, ' ');
  const body = briefing.sections.map((s) => `${s.title}\n${s.body}`).join('\n\n');
  return [
    // Names without addresses: the sender at a reserved domain, the recipient as an empty group.
    `From: ${header(meta.from)} <postmortem@lockwarden.invalid>`,
    `To: ${header(meta.to).replace(/[:;]/g, ' ')}:;`,
    `Subject: ${header(briefing.subject)}`,
    `Date: ${meta.date.toUTCString().replace('GMT', '+0000')}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    body.replace(/\r?\n/g, '\r\n'),
    '',
  ].join('\r\n');
}
