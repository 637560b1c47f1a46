// The post-mortem briefing: its sections, rendered from the facts by the template.
import { describeCycle } from '../lockContract/waitForGraph';
import { abortCriteria, type ReleaseGates, rollbackCommand } from './releaseGates';
import { type PatchDescription, patchSentence } from './patchDescription';
import type { PatchEvidence } from './patchEvidence';
import type { Mechanism, Timeline } from './timeline';

/** The sections of a briefing, in the order they must appear after the subject line. */
export const BRIEFING_SECTIONS = [
  'Executive Context',
  'Concurrency Anomaly Analysis',
  'Patch Validation Evidence',
  'Deployment Checklist & Guardrails',
] as const;
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
  /** What the patch is (`--patch`); absent in briefings from before it. */
  patch?: PatchDescription | null;
  /** Who at the firm owns the follow-up (`--owner`). */
  owner?: string;
}

/** Words in a text, as the limit counts them. */
function wordCount(text: string): number {
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
function patchReadiness(evidence: PatchEvidence): string {
  if (!evidence.tests) return 'patch unverified';
  return evidence.tests.failed > 0 ? 'patch not ready' : 'patch ready for canary';
}

/** The subject line: system, severity, mechanism and patch readiness. */
function briefingSubject(facts: BriefingFacts): string {
  const what = MECHANISM_TITLE[facts.timeline.mechanism.kind];
  return `[${facts.job}] ${SEVERITY[facts.timeline.mechanism.kind]} ${what}: ${patchReadiness(facts.evidence)}`;
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
        `${m.stale.label} held the lock with token ${m.staleToken} and was paused past its lease; the lock service let it ` +
        `lapse and ${m.next.label} took token ${m.nextToken}. When ${m.stale.label} woke, the resource's token check turned its ` +
        'late write away: the race was contained, not lost.'
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
 * The deterministic template: the default lane, and the fallback of the model lane. A timeline too
 * long for the word limit loses its routine steps first (requests, then ends and lettings go, then
 * waits), never a grant, a write or a refusal, and says how many it left out.
 */
export function renderBriefing(facts: BriefingFacts): Briefing {
  const all = facts.timeline.steps;
  const droppable = all
    .map((step, index) => ({ index, rank: STEP_RANK[step.kind] ?? 9 }))
    .filter((s) => s.rank < 9)
    .sort((a, b) => a.rank - b.rank || b.index - a.index);
  const dropped = new Set<number>();
  for (;;) {
    const briefing = compose(
      facts,
      all.filter((_, i) => !dropped.has(i)),
      dropped.size,
    );
    const next = droppable[dropped.size];
    if (briefingWords(briefing) <= MAX_BRIEFING_WORDS || !next) return briefing;
    dropped.add(next.index);
  }
}

// Which steps a long timeline gives up first (lowest first); those not named here are always kept.
const STEP_RANK: Partial<Record<Timeline['steps'][number]['kind'], number>> = {
  requested: 0,
  ended: 1,
  'let-go': 1,
  'escalation-resolved': 2,
  'kept-alive': 2,
  denied: 3,
  'operator-answered': 4,
  escalated: 5,
};

const NUMBER_WORDS = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
const inWords = (n: number) => NUMBER_WORDS[n] ?? String(n);
const plural = (n: number, one: string, many = `${one}s`) => `${inWords(n)} ${n === 1 ? one : many}`;

/** The business impact, verified from the fenced write log: what exists, what was refused, what was lost. */
export function impactSentences(timeline: Timeline): string {
  const writes = timeline.writes ?? [];
  if (!writes.length)
    return 'No fenced write log was given (--fenced), so the impact on the data is not verified.';
  const label = (session: string) => timeline.threads.find((t) => t.session === session)?.label ?? session;
  return writes
    .map((w) => {
      const writers = [...new Set(w.accepted.map((a) => label(a.session)))];
      const exists = `On ${w.resource}, ${plural(w.accepted.length, 'write')} exist${w.accepted.length === 1 ? 's' : ''}${writers.length ? `, by ${writers.join(' and ')}` : ''}.`;
      const refused = w.refused.length
        ? ` Refused: ${w.refused.map((r) => `${label(r.session)}'s write with token ${r.token}, older than token ${r.newestToken}`).join('; ')}.`
        : ' Nothing was refused.';
      return `${exists}${refused} Lost: nothing; no accepted write was followed by one with an older token.`;
    })
    .join(' ');
}

/** The shared state and the step that was not atomic, as the mechanism shows them. */
export function anatomySentence(timeline: Timeline): string {
  const m = timeline.mechanism;
  const resources = (timeline.writes ?? []).map((w) => w.resource).join(' and ') || "the job's output";
  switch (m.kind) {
    case 'paused-past-lease':
      return `Shared state: ${resources}, written by whichever replica believes it holds ${timeline.key}. Non-atomic step: "hold the lock, then write": ${m.stale.label} was paused between the two, past its lease, and wrote after ${m.next.label} had taken the key.`;
    case 'lock-inversion':
      return `Shared state: the keys ${[...new Set(m.cycle.map((e) => e.key))].join(' and ')}. Non-atomic step: taking them one at a time, in different orders, while holding the first.`;
    case 'starvation':
      return `Shared state: the waiting line of ${timeline.key}. Non-atomic step: each retry competes afresh instead of keeping a place.`;
    case 'none':
      return 'No unsynchronized shared state or non-atomic step shows in these events.';
  }
}

/** Unit, integration and fuzz assertions that would catch this mechanism again. */
export function regressionAssertions(timeline: Timeline): string[] {
  const m = timeline.mechanism;
  const resource = timeline.writes?.[0]?.resource ?? 'the fenced resource';
  switch (m.kind) {
    case 'paused-past-lease':
      return [
        `Unit: a write on ${resource} with token ${m.staleToken} after token ${m.nextToken} was accepted is refused, naming token ${m.nextToken}.`,
        `Integration: pause ${m.stale.label}'s worker past its lease on the real lock service; it ends having lost its hold and ${resource} keeps ${m.next.label}'s write only (test/billingExportIncident.test.ts).`,
        'Fuzz: random pauses, kills and partitions (campaign/faultCampaign.ts, fixed seed): no write accepted with a token older than one already accepted.',
      ];
    case 'lock-inversion':
      return [
        `Unit: the wait-for graph of these owners finds the cycle ${describeCycle(m.cycle)}.`,
        'Integration: two owners take the keys in opposite orders; one is told of the cycle and escalates, and neither waits forever (test/deadlockIdentity.workflow.test.ts).',
        'Fuzz: random orders of owners over the keys: every cycle is found and no false one is reported.',
      ];
    case 'starvation':
      return [
        `Unit: with FIFO fairness no later arrival takes ${timeline.key} ahead of an earlier one.`,
        'Integration: thirty-two waiters on one key each hold in turn, and none escalates twice (test/contention.workflow.test.ts).',
        'Fuzz: random arrival orders and hold times: no waiter is overtaken.',
      ];
    case 'none':
      return ['Unit, integration and fuzz: the existing suites of the lock path, unchanged.'];
  }
}

function compose(facts: BriefingFacts, steps: Timeline['steps'], omitted: number): Briefing {
  const { timeline, evidence, gates } = facts;
  const started =
    timeline.startedAt === null ? 'an unknown time' : new Date(timeline.startedAt).toISOString();
  const threads = timeline.threads.map((t) => `${t.label} is ${t.session}`).join('; ');
  const exec = [
    `${facts.stakeholder},`,
    '',
    `On ${started} the ${facts.job} (lock key ${timeline.key}) ran into a concurrency incident. ${mechanismSentence(timeline)}`,
    `Verified impact: ${impactSentences(timeline)}`,
  ].join('\n');

  const gap = timeline.clock?.offsetMs ?? 0;
  const clock = timeline.clock
    ? `Times are on the lock service's clock from the first event; Temporal's are moved ${Math.abs(gap)} ms ${gap >= 0 ? 'earlier' : 'later'}, the median gap between the service's time of an answer and Temporal's record of it (${plural(timeline.clock.samples, 'answer')}).`
    : "Times are on the lock service's clock from the first event.";
  const lines = steps.map((s, i) => `${i + 1}. ${formatOffset(s.offsetMs)} ${s.text}`);
  if (omitted > 0) lines.push(`(${plural(omitted, 'routine step')} left out for length.)`);
  const analysis = [
    `${threads || 'No session took the lock'}. ${clock}`,
    ...lines,
    anatomySentence(timeline),
  ].join('\n');

  const t = evidence.tests;
  const evidenceText = [
    patchSentence(facts.patch),
    t
      ? `Tests: ${t.passed} of ${t.total} passed, ${t.failed} failed, ${t.skipped} skipped.`
      : 'No test report was supplied: the patch is unverified until one is.',
    ...evidence.figures.map((f) => `- ${f}`),
    'Regression assertions:',
    ...regressionAssertions(timeline).map((a) => `- ${a}`),
  ].join('\n');

  const rollback = rollbackCommand(gates);
  const checklist = [
    `Canary: ${gates.canaryPercent.map((p) => `${p}%`).join(' -> ')} of workers, each step soaked ${gates.soakMinutes} minutes before the next.`,
    ...abortCriteria(gates).map((c) => `- Abort and roll back if ${c}.`),
    rollback
      ? `- Automated rollback: the abort alert runs \`${rollback}\`; sessions already running finish on the version that started them.`
      : '- Rollback: no target was given (--gates rollback); name the deployment and the previous build before the canary starts.',
    'The patch keeps per-key locks and parked waiters; it adds no blocking step and no lock wider than one key.',
    `Decision needed: approve the ${gates.canaryPercent[0]}% canary step, or reply with what must change first.`,
    '',
    `Regards,\n${facts.firm}${facts.owner ? ` (owner: ${facts.owner})` : ''}`,
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
