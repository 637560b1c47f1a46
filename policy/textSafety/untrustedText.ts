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

// Markdown's and HTML's active characters: links, images, tags, code spans, emphasis, headings, tables.
const MARKDOWN_ACTIVE = /[\\`*_[\]<>#|!]/g;

/**
 * Text a model wrote (an explanation, an escalation reason), made as safe as text that goes to one:
 * control and bidi characters removed, whitespace collapsed, length capped, and Markdown's active
 * characters escaped, since the Temporal UI renders a workflow's details as Markdown (a model's
 * `[click](https://…)` or `<img>` must stay text there). Callers redact it first.
 */
export function inertModelText(value: string, maxLength: number): string {
  return (
    untrustedText(value, maxLength)
      .replace(MARKDOWN_ACTIVE, (c) => `\\${c}`)
      // redact()'s own masks ([tenant], [time], ...) stay as they are: a bracketed word is no link.
      .replace(/\\\[([a-z-]+)\\\](?!\\?\()/g, '[$1]')
  );
}
