// Seed 004: "at most 650 words", always. Over incidents of 1 to 2,000 events the template stays
// within the limit, passes its validator, and keeps every grant, refusal and loss: each on a line of
// its own or counted on a summed one.
import fc from 'fast-check';
import { briefingWords, MAX_BRIEFING_WORDS, renderBriefingLines } from '../../policy/postmortem/briefing';
import type { IncidentEvent } from '../../policy/postmortem/incidentEvents';
import { NO_EVIDENCE } from '../../policy/postmortem/patchEvidence';
import { buildTimeline } from '../../policy/postmortem/timeline';
import { validateBriefing } from '../../policy/postmortem/validateBriefing';
import { GATES, INCIDENT_T0 } from '../support/incidents';

const SESSIONS = ['replica-a', 'replica-b', 'replica-c', 'batch-1', 'batch-2', 'cron'];

// One event of any kind, by any of a few sessions, `gap` ms after the one before.
const event = fc.record({
  gap: fc.integer({ min: 0, max: 5_000 }),
  session: fc.constantFrom(...SESSIONS),
  kind: fc.constantFrom(
    'requested',
    'denied',
    'granted',
    'kept-alive',
    'keep-alive-refused',
    'let-go',
    'let-go-refused',
    'escalated',
    'operator-answered',
    'escalation-resolved',
    'ended',
    'write-accepted',
    'write-refused',
  ),
  token: fc.integer({ min: 1, max: 5_000 }).map(String),
  resource: fc.integer({ min: 0, max: 60 }).map((n) => `table-${n}`),
  status: fc.constantFrom('released', 'lease-lost', 'abandoned'),
});

type Drawn = typeof event extends fc.Arbitrary<infer T> ? T : never;

function incident(drawn: Drawn[]): IncidentEvent[] {
  let t = INCIDENT_T0;
  return drawn.map((d): IncidentEvent => {
    t += d.gap;
    const base = { at: t, clock: 'service' as const, session: d.session };
    switch (d.kind) {
      case 'denied':
        return { ...base, kind: 'denied', holder: 'replica-a' };
      case 'granted':
      case 'kept-alive':
        return { ...base, kind: d.kind, token: d.token, leaseUntil: t + 30_000 };
      case 'keep-alive-refused':
      case 'let-go-refused':
        return { ...base, kind: d.kind, token: d.token, reason: 'the service holds a newer token' };
      case 'let-go':
        return { ...base, kind: 'let-go', token: d.token };
      case 'escalated':
        return { ...base, kind: 'escalated', reason: 'budget spent (max-retries)', deadlock: false };
      case 'operator-answered':
        return { ...base, kind: 'operator-answered', action: 'retry', operator: 'ops' };
      case 'ended':
        return { ...base, kind: 'ended', status: d.status, reason: null };
      case 'write-accepted':
        return { ...base, kind: 'write-accepted', token: d.token, resource: d.resource };
      case 'write-refused':
        return { ...base, kind: 'write-refused', token: d.token, newestToken: '9999', resource: d.resource };
      default:
        return { ...base, kind: d.kind };
    }
  });
}

/** The template's briefing of an incident, with its timeline and the lines it shows. */
function briefOf(events: IncidentEvent[]) {
  const timeline = buildTimeline('billing/nightly-export', events);
  const facts = {
    firm: 'Acme',
    stakeholder: 'Dana Lee',
    job: 'export',
    timeline,
    evidence: NO_EVIDENCE,
    gates: GATES,
  };
  return { timeline, ...renderBriefingLines(facts) };
}

// What a briefing never leaves out, named here apart from the code that condenses.
const MUST_KEEP = new Set<string>([
  'granted',
  'write-accepted',
  'write-refused',
  'keep-alive-refused',
  'let-go-refused',
  'deadlock-found',
]);

describe('the briefing within 650 words, always', () => {
  it('holds for incidents of 1 to 2,000 events, keeping every grant, refusal and loss', () => {
    fc.assert(
      // Lengths drawn evenly from 1 to 2,000 (fast-check's own sizing would keep most arrays short).
      fc.property(
        fc.integer({ min: 1, max: 2_000 }).chain((n) => fc.array(event, { minLength: n, maxLength: n })),
        (drawn) => {
          const { timeline, briefing, lines } = briefOf(incident(drawn));
          expect(briefingWords(briefing)).toBeLessThanOrEqual(MAX_BRIEFING_WORDS);
          const checked = { modelDrafted: false, evidence: NO_EVIDENCE };
          expect(validateBriefing(briefing, timeline, checked)).toEqual([]);
          // Every grant, write, refusal, deadlock and loss is on a line, or counted on one (a loss on a
          // line of its own kind), and every line is shown.
          const kept = timeline.steps.filter((step) => MUST_KEEP.has(step.kind) || step.lost === true);
          const counted = lines
            .filter((l) => MUST_KEEP.has(l.kind) || (l.kind === 'ended' && /lost its hold/.test(l.text)))
            .reduce((n, l) => n + l.count, 0);
          expect(counted).toBe(kept.length);
          const analysis = briefing.sections.find((s) => s.title === 'Concurrency Anomaly Analysis')!.body;
          for (const line of lines) expect(analysis).toContain(line.text);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('sums twenty writes of one thread with their count (the probe that made 741 words)', () => {
    const events: IncidentEvent[] = [
      {
        at: INCIDENT_T0,
        clock: 'service',
        session: 'replica-b',
        kind: 'granted',
        token: '8',
        leaseUntil: INCIDENT_T0 + 30_000,
      },
      ...Array.from({ length: 20 }, (_, i): IncidentEvent => ({
        at: INCIDENT_T0 + 100 + i,
        clock: 'service',
        session: 'replica-b',
        kind: 'write-accepted',
        token: '8',
        resource: `batch-${i}`,
      })),
    ];
    const { briefing, lines } = briefOf(events);
    expect(briefingWords(briefing)).toBeLessThanOrEqual(MAX_BRIEFING_WORDS);
    expect(lines.find((l) => l.kind === 'write-accepted')).toMatchObject({ count: 20 });
  });
});
