// The evidence a post-mortem briefing cites: test counts and benchmark figures, read from JSON reports.
import { z } from 'zod';
import { inAdmittedWords, leaseVocabulary } from '../textSafety/leaseVocabulary';
import { EVIDENCE_FORMAT, evidenceReportSchema, type EvidenceReportKind } from './evidenceReport';

/** The kinds of report `--evidence` reads: a jest JSON report, or a report the benches write. */
type EvidenceKind = 'jest-report' | EvidenceReportKind;

/** One report, as read: its label (`before`, `after`, or none), its test counts, its figures by name. */
interface EvidenceSource {
  label: string | null;
  kind: EvidenceKind;
  tests: TestCounts | null;
  figures: { name: string; value: string }[];
}

interface TestCounts {
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
  /**
   * The figures given under both a `before` and an `after` label whose values are numbers in the same
   * unit: what the latency and throughput verdict is computed from. Absent from older facts.
   */
  comparisons?: FigureComparison[];
}

/** One figure before and after the patch, as numbers in one unit. */
export interface FigureComparison {
  name: string;
  before: number;
  after: number;
  unit: string;
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
 * Reads one report: a jest JSON report (`jest --json`), or the JSON report a benchmark, the fault
 * campaign or the test runner writes beside its table (policy/postmortem/evidenceReport.ts). Throws
 * with the reason when the text is neither.
 */
export function readEvidence(text: string, label: string | null = null): EvidenceSource {
  const json = parseJson(text);
  if (json === undefined)
    throw new Error(
      'an evidence file must be JSON: a jest report (jest --json) or a report the benches write beside their tables (bench/results/*.json)',
    );
  const report = evidenceReportSchema.safeParse(json);
  if (report.success) {
    const { kind, tests, figures } = report.data;
    return { label, kind, tests, figures };
  }
  const jest = jestReportSchema.safeParse(json);
  if (!jest.success)
    throw new Error(
      `a JSON evidence file must be a jest report (jest --json) or a ${EVIDENCE_FORMAT} report: ${report.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.') || '(report)'}: ${i.message}`)
        .join('; ')}`,
    );
  const r = jest.data;
  const tests = {
    total: r.numTotalTests,
    passed: r.numPassedTests,
    failed: r.numFailedTests,
    skipped: r.numPendingTests,
  };
  return { label, kind: 'jest-report', tests, figures: [] };
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
    comparisons: comparisonsOf(byName),
  };
}

/** One report alone (no label): `readEvidence` and `combineEvidence` together. */
export function summariseEvidence(text: string): PatchEvidence {
  return combineEvidence([readEvidence(text)]);
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

// A figure's value as a number and its unit ("12.5 ms", "840 acquisitions/s", "3.1 %"), or null.
function measured(value: string): { n: number; unit: string } | null {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*([^\s(]*)/.exec(value);
  return m ? { n: Number(m[1]), unit: m[2] ?? '' } : null;
}

// The figures given both before and after the patch, in one unit.
function comparisonsOf(byName: Map<string, { label: string | null; value: string }[]>): FigureComparison[] {
  const out: FigureComparison[] = [];
  for (const [name, values] of byName) {
    const before = measured(values.find((v) => v.label === 'before')?.value ?? '');
    const after = measured(values.find((v) => v.label === 'after')?.value ?? '');
    if (before && after && before.unit === after.unit)
      out.push({ name, before: before.n, after: after.n, unit: before.unit });
  }
  return out;
}

/** Whether a figure measures latency (lower is better), throughput (higher is better), or neither. */
function dimensionOf(c: FigureComparison): 'latency' | 'throughput' | null {
  if (/\/(s|sec|second|min)$/i.test(c.unit) || /throughput|per second|rate|ops/i.test(c.name))
    return 'throughput';
  if (/^(ms|s|µs|us|ns)$/i.test(c.unit) || /latency|wait|p\d\d|duration|hand-?off/i.test(c.name))
    return 'latency';
  return null;
}

/**
 * The patch's latency and throughput verdict, computed from the before/after figures given as
 * evidence (seed 004's self-review): each figure's change and whether it is better, then the whole;
 * or a sentence saying that no such figures were given. Deterministic, so the validator can
 * recompute it and a model's draft must quote it.
 */
export function latencyThroughputVerdict(evidence: PatchEvidence): string {
  const rows = (evidence.comparisons ?? []).flatMap((c) => {
    const dimension = dimensionOf(c);
    if (!dimension || c.before === 0) return [];
    const change = ((c.after - c.before) / Math.abs(c.before)) * 100;
    const better = dimension === 'latency' ? change < 0 : change > 0;
    const verdict = Math.abs(change) < 1 ? 'unchanged' : better ? 'better' : 'worse';
    const unit = c.unit ? ` ${c.unit}` : '';
    return [
      {
        verdict,
        text: `${c.name} ${c.before}${unit} → ${c.after}${unit} (${change >= 0 ? '+' : ''}${change.toFixed(1)}%, ${verdict})`,
      },
    ];
  });
  if (!rows.length)
    return 'Latency and throughput verdict: not measured; no before/after latency or throughput figures were given (--evidence before=... after=...).';
  const kinds = new Set(rows.map((r) => r.verdict));
  const overall =
    kinds.size === 1
      ? [...kinds][0]!
      : kinds.has('worse') && kinds.has('better')
        ? 'mixed'
        : kinds.has('worse')
          ? 'worse'
          : 'better';
  return `Latency and throughput verdict: ${overall}, from ${rows.length} before/after figure(s): ${rows.map((r) => r.text).join('; ')}.`;
}
