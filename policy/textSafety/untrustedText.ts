// Control characters (C0 except tab/newline handling below, DEL, C1) and Unicode bidi overrides.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Makes text that came from outside (holder ids, constraints, failure messages) safe to show a model
 * as data: control and bidi characters removed, whitespace collapsed, length capped. The caller then
 * quotes it (JSON) so it can never read as an instruction boundary.
 */
export function untrustedText(value: string, maxLength: number): string {
  const flattened = value.replace(CONTROL, ' ').replace(/\s+/g, ' ').trim();
  return flattened.length > maxLength ? `${flattened.slice(0, maxLength)}…[truncated]` : flattened;
}
