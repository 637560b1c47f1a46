import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EvidenceFile } from '../../bench/evidenceFile';
import { leaseVocabulary } from '../../policy/textSafety/leaseVocabulary';
import type { IncidentEvent } from '../../policy/postmortem/incidentEvents';
import { type BriefingFacts, briefingWords, renderBriefing } from '../../policy/postmortem/briefing';
import {
  combineEvidence,
  latencyThroughputVerdict,
  NO_EVIDENCE,
  readEvidence,
  summariseEvidence,
} from '../../policy/postmortem/patchEvidence';
import { evidenceReport, evidenceReportSchema } from '../../policy/postmortem/evidenceReport';
import { releaseGatesSchema } from '../../policy/postmortem/releaseGates';
import { buildTimeline } from '../../policy/postmortem/timeline';
import { validateBriefing } from '../../policy/postmortem/validateBriefing';
import { GATES, INCIDENT_T0, PAUSED_PAST_LEASE } from '../support/incidents';

const T0 = INCIDENT_T0;
const at = (ms: number) => ({ at: T0 + ms, clock: 'service' as const });
const PAUSED = PAUSED_PAST_LEASE;

const facts = (events: IncidentEvent[], key = 'billing/nightly-export'): BriefingFacts => ({
  firm: 'Acme Advisory',
  stakeholder: 'Dana Lee',
  job: 'nightly-export',
  timeline: buildTimeline(key, events),
  evidence: NO_EVIDENCE,
  gates: GATES,
});

describe('post-mortem timeline', () => {
  it('names the paused holder Thread A and the next holder Thread B, in order, with their tokens', () => {
    const timeline = buildTimeline('billing/nightly-export', [...PAUSED].reverse());
    expect(timeline.threads).toEqual([
      { label: 'Thread A', session: 'replica-a' },
      { label: 'Thread B', session: 'replica-b' },
    ]);
    expect(timeline.mechanism).toMatchObject({ kind: 'paused-past-lease', staleToken: '7', nextToken: '8' });
    expect(timeline.steps.map((s) => s.text)).toEqual([
      'Thread A (replica-a) takes token 7, its lease running to +2.000 s',
      'Thread B (replica-b) is told to wait behind replica-a (2 times)',
      'Thread B (replica-b) takes token 8, its lease running to +32.100 s',
      'Thread B (replica-b) writes to invoices with token 8: accepted',
      'Thread A (replica-a) tries to keep token 7: refused, the service now holds token 8',
      'Thread A (replica-a) ends having lost its hold: the service now holds token 8',
      'Thread A (replica-a) writes to invoices with token 7: refused, the newest accepted is token 8',
    ]);
    // Deterministic: the same events, in any order, give the same timeline.
    expect(buildTimeline('billing/nightly-export', PAUSED)).toEqual(timeline);
  });

  it('finds a lock inversion from the deadlock facts the sessions recorded, not from their words', () => {
    const cycle = [
      { waiter: 'beta', key: 'a', holder: 'alpha' },
      { waiter: 'alpha', key: 'b', holder: 'beta' },
    ];
    // The reason text is free to change: nothing is parsed out of it.
    const timeline = buildTimeline('a', [
      { ...at(0), session: 'alpha', kind: 'granted', token: '1', leaseUntil: T0 + 30_000 },
      { ...at(10), session: 'beta', kind: 'deadlock-found', cycle, escalator: 'alpha' },
      { ...at(20), session: 'alpha', kind: 'escalated', reason: 'reworded', deadlock: true, cycle },
    ]);
    expect(timeline.mechanism).toEqual({ kind: 'lock-inversion', cycle, escalator: 'alpha' });
    expect(timeline.threads.map((t) => t.session)).toEqual(['alpha', 'beta']);
    expect(timeline.steps.map((s) => s.text)).toContain(
      'Thread B (beta) is told of a cycle of waits: beta waits for a held by alpha; alpha waits for b held by beta; alpha escalates it',
    );
    // A halted session's outcome alone is enough, and a model's suspicion (no cycle) is not a deadlock.
    const halted = buildTimeline('a', [
      { ...at(0), session: 'gamma', kind: 'escalated', reason: 'deadlock suspected', deadlock: true },
      {
        ...at(5),
        session: 'beta',
        kind: 'ended',
        status: 'halted',
        reason: 'whatever it said',
        deadlock: { cycle, escalator: 'alpha' },
      },
    ]);
    expect(halted.mechanism).toEqual({ kind: 'lock-inversion', cycle, escalator: 'alpha' });
    // On the key the escalator waits for, no one tells it of the cycle: its escalation names it.
    const escalatorsKey = buildTimeline('b', [
      { ...at(0), session: 'beta', kind: 'granted', token: '1', leaseUntil: T0 + 30_000 },
      { ...at(20), session: 'alpha', kind: 'escalated', reason: 'reworded', deadlock: true, cycle },
      { ...at(30), session: 'alpha', kind: 'ended', status: 'abandoned', reason: 'abandoned by bob' },
    ]);
    expect(escalatorsKey.mechanism).toEqual({ kind: 'lock-inversion', cycle, escalator: 'alpha' });
    // Edges join owners: the escalator is the owner whose waiting session escalated, by its requester.
    const owned = cycle.map((e) => ({ ...e, requester: e.waiter === 'alpha' ? 'replica-1' : 'replica-2' }));
    const byOwner = buildTimeline('b', [
      { ...at(0), session: 'replica-2', kind: 'granted', token: '1', leaseUntil: T0 + 30_000 },
      {
        ...at(20),
        session: 'replica-1',
        kind: 'escalated',
        reason: 'reworded',
        deadlock: true,
        cycle: owned,
      },
    ]);
    expect(byOwner.mechanism).toEqual({ kind: 'lock-inversion', cycle: owned, escalator: 'alpha' });
    const suspected = buildTimeline('a', [
      { ...at(0), session: 'gamma', kind: 'escalated', reason: 'deadlock suspected', deadlock: true },
    ]);
    expect(suspected.mechanism.kind).toBe('none');
  });

  it('finds starvation behind repeated escalations, and says plainly when it finds nothing', () => {
    const escalation = (ms: number): IncidentEvent => ({
      ...at(ms),
      session: 'late',
      kind: 'escalated',
      reason: 'budget spent (max-retries)',
      deadlock: false,
    });
    const starving = buildTimeline('k', [
      { ...at(0), session: 'late', kind: 'denied', holder: 'hog' },
      escalation(1),
      escalation(2),
      escalation(3),
    ]);
    expect(starving.mechanism).toEqual({ kind: 'starvation', escalations: 3 });
    expect(starving.threads.map((t) => t.session)).toEqual(['late', 'hog']);
    const calm = buildTimeline('k', [
      { ...at(0), session: 'x', kind: 'granted', token: '1', leaseUntil: T0 },
    ]);
    expect(calm.mechanism).toEqual({ kind: 'none' });
    expect(
      renderBriefing(facts([{ ...at(0), session: 'x', kind: 'granted', token: '1', leaseUntil: T0 }]))
        .sections[0]!.body,
    ).toContain('The events show no race, lock inversion or starvation');
  });
});

describe('post-mortem briefing: template and validator', () => {
  it('the template passes the validator, within 650 words, even for a long timeline', () => {
    const long: IncidentEvent[] = [...PAUSED];
    for (let i = 0; i < 200; i++)
      long.push({
        ...at(6_000 + i),
        session: i % 2 ? 'replica-a' : 'replica-b',
        kind: 'escalated',
        reason: `try ${i}`,
        deadlock: false,
      });
    for (const events of [PAUSED, long]) {
      const f = facts(events);
      const briefing = renderBriefing(f);
      expect(validateBriefing(briefing, f.timeline, { modelDrafted: false })).toEqual([]);
      expect(briefingWords(briefing)).toBeLessThanOrEqual(650);
    }
  });

  const base = facts(PAUSED);
  const good = renderBriefing(base);
  const withSection = (title: string, body: string) => ({
    ...good,
    sections: good.sections.map((s) => (s.title === title ? { ...s, body } : s)),
  });
  const rulesBroken = (briefing: typeof good, modelDrafted = true) =>
    validateBriefing(briefing, base.timeline, { modelDrafted }).map((p) => p.rule);

  it.each([
    ['sections', { ...good, sections: good.sections.slice(0, 3) }],
    ['sections', { ...good, sections: [...good.sections].reverse() }],
    ['length', withSection('Executive Context', 'word '.repeat(700))],
    ['threads', withSection('Concurrency Anomaly Analysis', 'Thread A paused; another session took over.')],
    [
      'abort-criteria',
      withSection('Deployment Checklist & Guardrails', 'Abort if things look bad.\nRoll out 10%.'),
    ],
    ['no-global-lock', withSection('Executive Context', 'We recommend a global lock around the export.')],
    ['draft-gate', withSection('Executive Context', 'Operators should renew the lease by hand.')],
  ])('refuses a briefing that breaks %s', (rule, briefing) => {
    expect(rulesBroken(briefing)).toContain(rule);
  });

  // Seed 004's self-review, answered from the briefing's own content (selfReview).
  const analysis = good.sections[1]!.body;
  const checklist = good.sections[3]!.body;
  it.each([
    [
      'a step without a time',
      analysis.replace(/T\+0\.000 s /, ''),
      'Concurrency Anomaly Analysis',
      'timeline step 1 has no a time',
    ],
    [
      'a step without a thread',
      analysis.replace('1. T+0.000 s Thread A', '1. T+0.000 s the first session'),
      'Concurrency Anomaly Analysis',
      'timeline step 1 has no a thread',
    ],
    [
      'no clock named',
      analysis.replace(/Times are on[^.]*\./, ''),
      'Concurrency Anomaly Analysis',
      'which clock',
    ],
    [
      'an abort without a window',
      checklist.replace(/ over 10 min/, ''),
      'Deployment Checklist & Guardrails',
      'has no a window',
    ],
    [
      'an abort without a metric',
      checklist.replace(/ \(lockwarden_acquisition_wait_seconds\)/, ''),
      'Deployment Checklist & Guardrails',
      'has no a metric',
    ],
    [
      'no rollback target',
      checklist.replace(/set-current-version/, 'roll back'),
      'Deployment Checklist & Guardrails',
      'no rollback target',
    ],
    [
      'a verdict as a fixed sentence',
      good.sections[2]!.body.replace(/Latency and throughput verdict: [^\n]*/, 'The patch adds no latency.'),
      'Patch Validation Evidence',
      'latency and throughput verdict',
    ],
  ])('fails self-review on %s', (_what, body, title, problem) => {
    const broken = withSection(title, body);
    const found = validateBriefing(broken, base.timeline, { modelDrafted: false, evidence: base.evidence });
    expect(found).toContainEqual({ rule: 'self-review', problem: expect.stringContaining(problem) });
  });

  it('computes the latency and throughput verdict from before/after figures, and checks the briefing gives that one', () => {
    const report = (p99: string, rate: string) =>
      JSON.stringify(
        evidenceReport('contention-bench', 'contention', [
          { name: 'hand-off p99', value: p99 },
          { name: 'acquisitions', value: rate },
        ]),
      );
    const evidence = combineEvidence([
      readEvidence(report('120 ms', '800 acquisitions/s'), 'before'),
      readEvidence(report('90 ms', '840 acquisitions/s'), 'after'),
    ]);
    const verdict = latencyThroughputVerdict(evidence);
    expect(verdict).toBe(
      'Latency and throughput verdict: better, from 2 before/after figure(s): hand-off p99 120 ms → 90 ms (-25.0%, better); acquisitions 800 acquisitions/s → 840 acquisitions/s (+5.0%, better).',
    );
    expect(latencyThroughputVerdict(NO_EVIDENCE)).toMatch(
      /^Latency and throughput verdict: not measured; no before\/after/,
    );
    const briefed = { ...base, evidence };
    const briefing = renderBriefing(briefed);
    expect(validateBriefing(briefing, briefed.timeline, { modelDrafted: false, evidence })).toEqual([]);
    // The same briefing read against other figures gives the wrong verdict: refused.
    const worse = combineEvidence([
      readEvidence(report('90 ms', '840 acquisitions/s'), 'before'),
      readEvidence(report('120 ms', '800 acquisitions/s'), 'after'),
    ]);
    expect(
      validateBriefing(briefing, briefed.timeline, { modelDrafted: false, evidence: worse }),
    ).toContainEqual(expect.objectContaining({ rule: 'self-review' }));
  });

  it('refuses a token or a credential in a model draft, and not in the template', () => {
    expect(rulesBroken(good, false)).toEqual([]);
    const leaky = withSection(
      'Executive Context',
      'Replica A held token 7; db at postgres://u:hunter2@db/x.',
    );
    expect(rulesBroken(leaky)).toContain('no-secrets');
  });
});

describe('post-mortem inputs', () => {
  it('summarises a jest report and a bench report, and refuses anything else, text included', () => {
    const jest = JSON.stringify({
      numTotalTests: 12,
      numPassedTests: 11,
      numFailedTests: 1,
      numPendingTests: 0,
    });
    expect(summariseEvidence(jest)).toEqual({
      source: 'jest-report',
      tests: { total: 12, passed: 11, failed: 1, skipped: 0 },
      figures: [],
      comparisons: [],
    });
    const bench = JSON.stringify(
      evidenceReport(
        'contention-bench',
        'contention, sqlite',
        [{ name: 'P1 uncontended acquire + release, p50', value: '50.7 ms (floor 49.5 ms, 1.02×)' }],
        { total: 271, passed: 271, failed: 0, skipped: 0 },
      ),
    );
    expect(summariseEvidence(bench)).toEqual({
      source: 'contention-bench',
      tests: { total: 271, passed: 271, failed: 0, skipped: 0 },
      figures: ['P1 uncontended take and let go, p50: 50.7 ms (floor 49.5 ms, 1.02×)'],
      comparisons: [],
    });
    expect(() => summariseEvidence('{"hello": 1}')).toThrow('must be a jest report');
    expect(() => summariseEvidence(JSON.stringify({ ...JSON.parse(bench), kind: 'novel' }))).toThrow(/kind/);
    // The table a bench prints is for people: the briefing reads the JSON beside it.
    expect(() => summariseEvidence('| P1 uncontended | 50 ms |\n271 passed, 0 failed')).toThrow(
      'must be JSON',
    );
  });

  it('reads the JSON the benches and the campaign wrote, and pairs a figure reported before and after', () => {
    const results = path.join(__dirname, '..', '..', 'bench', 'results');
    const read = (file: string) => fs.readFileSync(path.join(results, file), 'utf8');
    const contention = read('contention-sqlite.json');
    const p1 = evidenceReportSchema.parse(JSON.parse(contention)).figures[0]!;
    const campaign = evidenceReportSchema.parse(JSON.parse(read('campaign-sqlite-seed2026.json')));
    const evidence = combineEvidence([
      readEvidence(contention, 'before'),
      readEvidence(contention, 'after'),
      readEvidence(JSON.stringify(campaign)),
      readEvidence(read('scale-sqlite.json')),
    ]);
    expect(evidence.source).toBe(
      'before: contention-bench, after: contention-bench, fault-campaign, scale-bench',
    );
    const value = p1.value.split(' (')[0]!;
    expect(evidence.figures).toContain(
      `${p1.name.replace('acquire + release', 'take and let go')}: before ${value} → after ${value}${p1.value.slice(value.length)}`,
    );
    expect(evidence.figures.find((f) => f.startsWith('fault campaign on sqlite (seed 2026)'))).toBe(
      `fault campaign on sqlite (seed 2026): ${campaign.figures[0]!.value}`,
    );
    expect(evidence.figures.some((f) => /^\d+ parked waiters on \d+ keys: worker CPU/.test(f))).toBe(true);
    expect(evidence.figures.length).toBeLessThanOrEqual(8);
    for (const line of evidence.figures) expect(leaseVocabulary(line)).toBeNull();
  });

  it('reads what the benches write: an EvidenceFile report, tests counted, figures in order', () => {
    const file = path.join(os.tmpdir(), `lockwarden-evidence-${process.pid}.json`);
    const written = new EvidenceFile('fault-campaign', 'backend sqlite, seed 7, 60 s');
    written.figure('fault campaign on sqlite (seed 7)', '0 violations (10 of 10 writes accepted)');
    written.write(file, { total: 3, passed: 2, failed: 1, skipped: 0 });
    try {
      expect(readEvidence(fs.readFileSync(file, 'utf8'), 'after')).toEqual({
        label: 'after',
        kind: 'fault-campaign',
        tests: { total: 3, passed: 2, failed: 1, skipped: 0 },
        figures: [
          { name: 'fault campaign on sqlite (seed 7)', value: '0 violations (10 of 10 writes accepted)' },
        ],
      });
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it('refuses gates without a number to abort on, or a canary that does not rise to 100', () => {
    const rollback = { deployment: 'lockwarden', previousBuildId: '0.1.0' };
    const problems = (input: unknown) =>
      releaseGatesSchema.safeParse(input).error?.issues.map((i) => i.message);
    expect(problems({ canaryPercent: [1, 100], soakMinutes: 10, abort: {}, rollback })).toEqual([
      'must set at least one threshold',
    ]);
    expect(
      problems({ canaryPercent: [10, 5, 100], soakMinutes: 10, abort: { p99WaitMs: 1 }, rollback }),
    ).toEqual(['must rise step by step']);
    expect(problems({ canaryPercent: [10, 50], soakMinutes: 10, abort: { p99WaitMs: 1 }, rollback })).toEqual(
      ['must end at 100'],
    );
    // Every abort needs a target to roll back to (seed 004's self-review).
    expect(problems({ canaryPercent: [10, 100], soakMinutes: 10, abort: { p99WaitMs: 1 } })).toEqual([
      'must name the rollback target: { deployment, previousBuildId }',
    ]);
  });
});
