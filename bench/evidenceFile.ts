// Writes a bench's JSON evidence report beside its table: what `lockctl postmortem --evidence` reads.
import fs from 'node:fs';
import {
  evidenceReport,
  type EvidenceReport,
  type EvidenceReportKind,
} from '../policy/postmortem/evidenceReport';

/** Collects a run's figures as it prints them, and writes them as one report. */
export class EvidenceFile {
  private readonly figures: EvidenceReport['figures'] = [];

  constructor(
    private readonly kind: EvidenceReportKind,
    private readonly run: string,
  ) {}

  /** One figure: its name and its value as the table shows it (baseline and ratio included). */
  figure(name: string, value: string): void {
    this.figures.push({ name, value });
  }

  /** Writes the report to `file` (a `.json` beside the table). */
  write(file: string, tests: EvidenceReport['tests'] = null): void {
    fs.writeFileSync(
      file,
      JSON.stringify(evidenceReport(this.kind, this.run, this.figures, tests), null, 2) + '\n',
    );
  }
}
