// The JSON report the benchmarks, the fault campaign and the test runner write beside their tables,
// which a post-mortem briefing reads as evidence: facts as fields, never parsed out of prose.
import { z } from 'zod';

/** The format's name and version, the first field of every report. */
export const EVIDENCE_FORMAT = 'lockwarden-evidence/1';

/** What wrote a report. */
const EVIDENCE_KINDS = ['contention-bench', 'scale-bench', 'fault-campaign', 'test-summary'] as const;
export type EvidenceReportKind = (typeof EVIDENCE_KINDS)[number];

const count = z.number().int().nonnegative();

/** Test counts, as the runner counted them. */
const testCountsSchema = z.strictObject({
  total: count,
  passed: count,
  failed: count,
  skipped: count,
});

/**
 * One report. `figures` are the rows a reader acts on, each a name and its value as the table shows it
 * (with its baseline and ratio where it has one), most important first.
 */
export const evidenceReportSchema = z.strictObject({
  format: z.literal(EVIDENCE_FORMAT),
  kind: z.enum(EVIDENCE_KINDS),
  /** What the run was (backend, seed, commit, date), one line. */
  run: z.string().max(400),
  tests: testCountsSchema.nullable(),
  figures: z
    .array(z.strictObject({ name: z.string().min(1).max(200), value: z.string().min(1).max(400) }))
    .max(100),
});
export type EvidenceReport = z.infer<typeof evidenceReportSchema>;

/** A report of `kind`, in the format. */
export function evidenceReport(
  kind: EvidenceReportKind,
  run: string,
  figures: EvidenceReport['figures'],
  tests: EvidenceReport['tests'] = null,
): EvidenceReport {
  return evidenceReportSchema.parse({ format: EVIDENCE_FORMAT, kind, run, tests, figures });
}
