// The post-mortem briefing: its sections, rendered from the facts by the template.
import { describeCycle } from '../lockContract/waitForGraph';
import { abortCriteria, type ReleaseGates, rollbackCommand } from './releaseGates';
import { type PatchDescription, patchSentence } from './patchDescription';
import { latencyThroughputVerdict, type PatchEvidence } from './patchEvidence';
import type { Mechanism, Timeline } from './timeline';
import { type Condensation, condenseSteps, droppableCount, type TimelineLine } from './condense';

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
 * The deterministic template: the default lane, and the fallback of the model lane. Always within
 * the word limit: a long timeline gives up its routine steps first (requests, then ends and lettings
 * go, then waits) and says how many it left out; then alike steps are summed with their counts (a
 * thread's consecutive ones, then all of a thread's, then all of a kind); last, the impact and the
 * evidence speak in counts. No grant, write, refusal or loss is ever left out: it is on a line of
 * its own or counted on a summed one (a property test checks both, for incidents of up to 2,000 events).
 */
export function renderBriefing(facts: BriefingFacts): Briefing {
  return renderBriefingLines(facts).briefing;
}

/** The template's briefing with the timeline's lines it shows (what a summed line stands for, counted). */
export function renderBriefingLines(facts: BriefingFacts): Composed {
  const steps = facts.timeline.steps;
  const fits = (c: Composed) => briefingWords(c.briefing) <= MAX_BRIEFING_WORDS;
  // Fewest routine steps left out that fit: words only fall as more are left out, so a binary search.
  let low = 0;
  let high = droppableCount(steps);
  let composed = compose(facts, { dropped: high, summing: 'none' }, false);
  if (fits(composed)) {
    while (low < high) {
      const mid = Math.floor((low + high) / 2);
      if (fits(compose(facts, { dropped: mid, summing: 'none' }, false))) high = mid;
      else low = mid + 1;
    }
    return compose(facts, { dropped: low, summing: 'none' }, false);
  }
  for (const summing of ['runs', 'threads', 'kinds'] as const)
    for (const brief of [false, true]) {
      composed = compose(facts, { dropped: high, summing }, brief);
      if (fits(composed)) return composed;
    }
  return composed; // validateBriefing refuses it; the property test shows it never comes to this
}

/** A composed briefing and the timeline lines in it. */
interface Composed {
  briefing: Briefing;
  lines: TimelineLine[];
}

const NUMBER_WORDS = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
const inWords = (n: number) => NUMBER_WORDS[n] ?? String(n);
const plural = (n: number, one: string, many = `${one}s`) => `${inWords(n)} ${n === 1 ? one : many}`;

/**
 * The business impact, verified from the fenced write log: what exists, what was refused, what was
 * lost. `brief`: the refusals as counts, for a briefing that must fit its word limit.
 */
export function impactSentences(timeline: Timeline, brief = false): string {
  const writes = timeline.writes ?? [];
  if (!writes.length)
    return 'No fenced write log was given (--fenced), so the impact on the data is not verified.';
  const label = (session: string) => timeline.threads.find((t) => t.session === session)?.label ?? session;
  if (brief && writes.length > 2) {
    // Many resources: one sentence for all of them, in counts.
    const accepted = writes.flatMap((w) => w.accepted);
    const refused = writes.flatMap((w) => w.refused);
    const on = `On ${plural(writes.length, 'resource')} (${namesOf(
      writes.map((w) => w.resource),
      'resource',
    )})`;
    const exists = `${on}, ${plural(accepted.length, 'write')} exist${accepted.length === 1 ? 's' : ''}${accepted.length ? `, by ${namesOf(accepted.map((a) => label(a.session)))}` : ''}.`;
    const refusedText = refused.length
      ? ` Refused: ${plural(refused.length, 'write')} with a token older than the newest accepted, by ${namesOf(refused.map((r) => label(r.session)))}.`
      : ' Nothing was refused.';
    return `${exists}${refusedText} Lost: nothing; no accepted write was followed by one with an older token.`;
  }
  return writes
    .map((w) => {
      const writers = namesOf(w.accepted.map((a) => label(a.session)));
      const exists = `On ${w.resource}, ${plural(w.accepted.length, 'write')} exist${w.accepted.length === 1 ? 's' : ''}${writers ? `, by ${writers}` : ''}.`;
      const refused = !w.refused.length
        ? ' Nothing was refused.'
        : brief
          ? ` Refused: ${plural(w.refused.length, 'write')} with a token older than the newest accepted, by ${namesOf(w.refused.map((r) => label(r.session)))}.`
          : ` Refused: ${w.refused.map((r) => `${label(r.session)}'s write with token ${r.token}, older than token ${r.newestToken}`).join('; ')}.`;
      return `${exists}${refused} Lost: nothing; no accepted write was followed by one with an older token.`;
    })
    .join(' ');
}

// Who (or what) it was: up to three names, then how many others.
function namesOf(all: string[], what = 'session'): string {
  const names = [...new Set(all)];
  if (names.length <= 3) return names.join(' and ');
  return `${names.slice(0, 3).join(', ')} and ${plural(names.length - 3, `other ${what}`)}`;
}

/** The shared state and the step that was not atomic, as the mechanism shows them. */
export function anatomySentence(timeline: Timeline): string {
  const m = timeline.mechanism;
  const resources =
    namesOf(
      (timeline.writes ?? []).map((w) => w.resource),
      'resource',
    ) || "the job's output";
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

function compose(facts: BriefingFacts, condensation: Condensation, brief: boolean): Composed {
  const { timeline, evidence, gates } = facts;
  const { lines: timelineLines, omitted } = condenseSteps(timeline.steps, condensation);
  const started =
    timeline.startedAt === null ? 'an unknown time' : new Date(timeline.startedAt).toISOString();
  const threads = timeline.threads.map((t) => `${t.label} is ${t.session}`).join('; ');
  const exec = [
    `${facts.stakeholder},`,
    '',
    `On ${started} the ${facts.job} (lock key ${timeline.key}) ran into a concurrency incident. ${mechanismSentence(timeline)}`,
    `Verified impact: ${impactSentences(timeline, brief)}`,
  ].join('\n');

  const gap = timeline.clock?.offsetMs ?? 0;
  const clock = timeline.clock
    ? `Times are on the lock service's clock from the first event; Temporal's are moved ${Math.abs(gap)} ms ${gap >= 0 ? 'earlier' : 'later'}, the median gap between the service's time of an answer and Temporal's record of it (${plural(timeline.clock.samples, 'answer')}).`
    : "Times are on the lock service's clock from the first event.";
  const lines = timelineLines.map((s, i) => `${i + 1}. ${formatOffset(s.offsetMs)} ${s.text}`);
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
    ...(brief && evidence.figures.length > 3
      ? [
          ...evidence.figures.slice(0, 3).map((f) => `- ${f}`),
          `- (${plural(evidence.figures.length - 3, 'more figure')} in the evidence given)`,
        ]
      : evidence.figures.map((f) => `- ${f}`)),
    latencyThroughputVerdict(evidence),
    'Regression assertions:',
    // Brief: the unit and integration assertions; the fuzz one gives way for length.
    ...regressionAssertions(timeline)
      .slice(0, brief ? 2 : undefined)
      .map((a) => `- ${a}`),
  ].join('\n');

  const rollback = rollbackCommand(gates);
  const checklist = [
    `Canary: ${gates.canaryPercent.map((p) => `${p}%`).join(' -> ')} of workers, each step soaked ${gates.soakMinutes} minutes before the next.`,
    ...abortCriteria(gates).map((c) => `- Abort and roll back if ${c}.`),
    rollback
      ? `- Automated rollback: the abort alert runs \`${rollback}\`; sessions already running finish on the version that started them.`
      : '- Rollback: no target was given (--gates rollback); name the deployment and the previous build before the canary starts.',
    `Decision needed: approve the ${gates.canaryPercent[0]}% canary step, or reply with what must change first.`,
    '',
    `Regards,\n${facts.firm}${facts.owner ? ` (owner: ${facts.owner})` : ''}`,
  ].join('\n');

  const briefing = {
    subject: briefingSubject(facts),
    sections: [
      { title: 'Executive Context', body: exec },
      { title: 'Concurrency Anomaly Analysis', body: analysis },
      { title: 'Patch Validation Evidence', body: evidenceText },
      { title: 'Deployment Checklist & Guardrails', body: checklist },
    ],
  };
  return { briefing, lines: timelineLines };
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
