/**
 * A value as a visibility query's string literal, in the one form every visibility store reads
 * exactly (quotes doubled inside); null for a value that form cannot carry (a quote at either end, a
 * `?` or a backslash), which callers then match some other way.
 */
export function visibilityLiteral(value: string): string | null {
  if (/^'|'$|[?\\]/.test(value)) return null;
  return `'${value.replace(/'/g, "''")}'`;
}
