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
