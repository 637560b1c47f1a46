// How lockctl shows things to a person: durations, tables and a waiting session's progress.

import type { SessionState } from '../policy/sessionModel/sessionTypes';

/** A duration for people: `850 ms`, `12.3 s`, `4 min 05 s`, `2 h 03 min`. */
export function duration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.floor(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3_600)} h ${String(Math.floor((s % 3_600) / 60)).padStart(2, '0')} min`;
}

// C0 and C1 controls (escape sequences, bells, carriage returns), bidirectional controls and
// invisible characters: text from a lock service, a holder or an operator may carry any of them.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

/**
 * `text` safe to print to a terminal: every control, bidirectional or invisible character shown as
 * its escape (`\u001b`), so a value can neither drive the terminal nor hide what it says.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A plain-text table: a header, then one line a row, columns padded to their widest cell (printable). */
export function table(header: string[], rawRows: string[][]): string {
  const rows = rawRows.map((row) => row.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/**
 * One line on a waiting session: how long, which attempt, its place and whom it waits behind, and
 * the last decision (who made it and what the guardrails applied).
 */
export function progressLine(state: SessionState, elapsedMs: number): string {
  const parts = [`${state.phase} ${duration(elapsedMs)}`, `attempts ${state.attempts}`];
  if (state.place !== null) parts.push(`place ${state.place}`);
  if (state.holder && state.phase !== 'holding') parts.push(`behind ${state.holder}`);
  const last = state.decisions.at(-1);
  if (last) {
    const applied = last.appliedMs === null ? '' : ` ${duration(last.appliedMs)}`;
    const cause = last.fallbackCause ? `, ${last.fallbackCause}` : '';
    parts.push(`last decision ${last.decision}${applied} (${last.provider}${cause})`);
  }
  if (state.escalation && state.phase === 'escalated') parts.push(`escalated: ${state.escalation.reason}`);
  return printable(parts.join(' · '));
}
