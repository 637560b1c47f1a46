import { z } from 'zod';
import { inAdmittedWords, leaseVocabulary } from '../leaseVocabulary';

/** The kinds of report `--evidence` reads. */
export type EvidenceKind =
  'jest-report' | 'test-summary' | 'contention-bench' | 'fault-campaign' | 'scale-bench';

/** One report, as read: its label (`before`, `after`, or none), its test counts, its figures by name. */
export interface EvidenceSource {
  label: string | null;
  kind: EvidenceKind;
  tests: TestCounts | null;
  figures: { name: string; value: string }[];
}

export interface TestCounts {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
}

/** What `--evidence` held, summarised for the briefing. */
export interface PatchEvidence {
  /** The reports read, by label and kind (`none` when nothing was given). */
  source: string;
  /** Test counts: from the report labelled `after` when there is one, else the last with counts. */
  tests: TestCounts | null;
  /** Figure lines; a figure reported under two labels reads "name: before X → after Y". At most eight. */
  figures: string[];
}

const jestReportSchema = z.looseObject({
  numTotalTests: z.number().int().nonnegative(),
  numPassedTests: z.number().int().nonnegative(),
  numFailedTests: z.number().int().nonnegative(),
  numPendingTests: z.number().int().nonnegative().default(0),
});

/** No evidence given. */
export const NO_EVIDENCE: PatchEvidence = { source: 'none', tests: null, figures: [] };

/**
 * Reads one report: a jest JSON report (`--json`), `bench/contention.ts`'s table,
 * `bench/faultCampaign.ts`'s output, the scale bench's table, or an "N passed, N failed" line.
 * Throws with the reason when the text is none of them.
 */
export function readEvidence(text: string, label: string | null = null): EvidenceSource {
  const json = parseJson(text);
  if (json !== undefined) {
    const report = jestReportSchema.safeParse(json);
    if (!report.success) throw new Error('a JSON evidence file must be a jest report (jest --json)');
    const r = report.data;
    const tests = {
      total: r.numTotalTests,
      passed: r.numPassedTests,
      failed: r.numFailedTests,
      skipped: r.numPendingTests,
    };
    return { label, kind: 'jest-report', tests, figures: [] };
  }
  const summary = /(\d+) passed, (\d+) failed/.exec(text);
  const tests = summary
    ? {
        total: Number(summary[1]) + Number(summary[2]),
        passed: Number(summary[1]),
        failed: Number(summary[2]),
        skipped: 0,
      }
    : null;
  const campaign = campaignFigures(text);
  if (campaign) return { label, kind: 'fault-campaign', tests, figures: campaign };
  const scale = scaleFigures(text);
  if (scale.length) return { label, kind: 'scale-bench', tests, figures: scale };
  const contention = contentionFigures(text);
  if (contention.length) return { label, kind: 'contention-bench', tests, figures: contention };
  if (tests) return { label, kind: 'test-summary', tests, figures: [] };
  throw new Error(
    'the evidence file holds none of: a jest report, a contention, scale or fault-campaign bench output, an "N passed, N failed" line',
  );
}

/** The reports together: test counts from the `after` report, figures paired across labels. */
export function combineEvidence(sources: EvidenceSource[]): PatchEvidence {
  if (!sources.length) return NO_EVIDENCE;
  const withTests = sources.filter((s) => s.tests);
  const tests = (withTests.find((s) => s.label === 'after') ?? withTests.at(-1))?.tests ?? null;
  const byName = new Map<string, { label: string | null; value: string }[]>();
  // At most three figures a report, so that every report is heard within the eight.
  for (const source of sources)
    for (const figure of source.figures.slice(0, 3)) {
      const name = inAdmittedWords(figure.name);
      byName.set(name, [
        ...(byName.get(name) ?? []),
        { label: source.label, value: inAdmittedWords(figure.value) },
      ]);
    }
  const figures = [...byName.entries()]
    .map(([name, values]) =>
      values.length === 1
        ? `${name}: ${values[0]!.label ? `${values[0]!.label} ` : ''}${values[0]!.value}`
        : // Paired: each label's figure, then the last one's baseline once.
          `${name}: ${values.map((v) => `${v.label ?? '?'} ${v.value.split(' (')[0]}`).join(' → ')}${baselineOf(values.at(-1)!.value)}`,
    )
    .filter((line) => !leaseVocabulary(line))
    .slice(0, 8);
  return {
    source: sources.map((s) => (s.label ? `${s.label}: ${s.kind}` : s.kind)).join(', '),
    tests,
    figures,
  };
}

/** One report alone (no label): `readEvidence` and `combineEvidence` together. */
export function summariseEvidence(text: string): PatchEvidence {
  return combineEvidence([readEvidence(text)]);
}

// bench/contention.ts: the P1, P3, P4 rows (figure, lockwarden, baseline, ratio) and the P2 rows.
function contentionFigures(text: string): EvidenceSource['figures'] {
  const figures: EvidenceSource['figures'] = [];
  let p2 = false;
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (!line.startsWith('|')) {
      p2 = false;
      continue;
    }
    const cells = line
      .split('|')
      .map((c) => c.trim())
      .slice(1, -1);
    if (/^P2, N = \d+, one key/.test(cells[0] ?? '')) p2 = true;
    // The rows a reader acts on: the client-observed ones, against their Temporal baseline.
    else if (
      /^P\d/.test(cells[0] ?? '') &&
      cells.length >= 4 &&
      !/session's shape|service clock/.test(cells[0]!)
    )
      figures.push({ name: cells[0]!, value: `${cells[1]} (${cells[2]}, ${cells[3]})` });
    else if (p2 && /^hold /.test(cells[0] ?? '') && cells.length >= 5)
      figures.push({
        name: `P2 utilization, 32 waiters, ${cells[0]}`,
        value: `${cells[1]}; full-jitter loop ${cells[3]}, fixed polling ${cells[4]}`,
      });
  }
  return figures;
}

// bench/faultCampaign.ts: the backend and seed, the writes, the violations.
function campaignFigures(text: string): EvidenceSource['figures'] | null {
  const run = /backend (\w+), seed (\d+), (\d+) s/.exec(text);
  const writes = /writes: (\d+) attempted, (\d+) accepted, (\d+) refused as stale/.exec(text);
  const violations = /violations: (.*)/.exec(text);
  if (!run || !writes || !violations) return null;
  const total = [...violations[1]!.matchAll(/ (\d+)(,|$)/g)].reduce((n, m) => n + Number(m[1]), 0);
  const faults = /faults: (.*)/.exec(text)?.[1];
  const faultCount = faults ? [...faults.matchAll(/ (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0) : null;
  return [
    {
      name: `fault campaign on ${run[1]} (seed ${run[2]})`,
      // The violations first: paired before and after, they are what changed.
      value:
        `${total} violations (${writes[2]} of ${writes[1]} writes accepted, ${writes[3]} refused as stale` +
        `${faultCount === null ? '' : `, ${faultCount} faults`}, ${run[3]} s)`,
    },
  ];
}

// The scale bench: parked waiters, keys, worker CPU, lock calls/s and the drain, per row.
function scaleFigures(text: string): EvidenceSource['figures'] {
  const lines = text.split('\n').map((l) => l.trim());
  const header = lines.find((l) => /^\| waiters \| keys \| worker CPU/.test(l));
  if (!header) return [];
  return lines
    .filter((l) => /^\| \d+ \| \d+ \|/.test(l))
    .slice(0, 3)
    .map((l) => {
      const c = l
        .split('|')
        .map((x) => x.trim())
        .slice(1, -1);
      const drain = c[7] && c[7] !== '–' ? `, drain ${c[7].split(',')[0]}` : '';
      return {
        name: `${c[0]} parked waiters on ${c[1]} keys`,
        value: `worker CPU ${c[2]}, ${c[4]} lock calls/s${drain}`,
      };
    });
}

// The parenthetical a figure carries (its baseline and ratio), with its leading space; or nothing.
function baselineOf(value: string): string {
  const at = value.indexOf(' (');
  return at < 0 ? '' : value.slice(at);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
