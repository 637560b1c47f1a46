/** What one pass of redaction removed, by kind; counted in logs, never printed. */
export interface RedactionCounts {
  token: number;
  deadline: number;
  credential: number;
  connectionString: number;
  tenant: number;
}

/** Text made safe for a model, and what was taken out of it. */
interface Redacted {
  text: string;
  counts: RedactionCounts;
}

const MONTH = '(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\\.?';
const WEEKDAY = '(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\\.?,?';
const CLOCK = '\\d{1,2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:\\s*[ap]\\.?m\\.?)?';
const ZONE = '(?:\\s*(?:z|utc|gmt|[a-z]{2,4}t|[+-]\\d{2}:?\\d{2}))?';
// Names a fencing token goes by: token, tok, fencing, fence, fencing_token, fencingToken, lease-token…
const TOKEN_NAME = '(?:(?:fencing|fence|lease)[_ -]?)?(?:token|tok)|fencing|fence';

// Order matters: connection strings carry credentials, so they go first and whole.
const RULES: { kind: keyof RedactionCounts; pattern: RegExp; mask: string }[] = [
  { kind: 'connectionString', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s'"]+/gi, mask: '[connection-string]' },
  // user:password@host, with no scheme in front.
  { kind: 'credential', pattern: /[^\s:@/'"=]+:[^\s@/'"]+@[^\s'",;]+/g, mask: '[credential]' },
  { kind: 'credential', pattern: /\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, mask: '$1 [credential]' },
  // API keys of the common shapes: sk-…, AWS access key ids, GitHub and Slack tokens, JWTs.
  {
    kind: 'credential',
    pattern:
      /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g,
    mask: '[credential]',
  },
  {
    kind: 'credential',
    pattern:
      /\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|client[_-]?secret)(["']?\s*[=:]\s*)["']?[^\s"',;}]+["']?/gi,
    mask: '$1$2[credential]',
  },
  {
    kind: 'token',
    pattern: new RegExp(`\\b(${TOKEN_NAME})\\b(["']?\\s*(?:[=:#]|is|was|no\\.?)?\\s*["']?)\\d+\\b`, 'gi'),
    mask: '$1$2[token]',
  },
  // ISO 8601 (with T or a space), RFC 2822, and "Dec 2 10:00 UTC" / "2 Dec 2026 10:00" forms.
  {
    kind: 'deadline',
    pattern: /\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(\s?Z|\s?[+-]\d{2}:?\d{2})?/gi,
    mask: '[time]',
  },
  {
    kind: 'deadline',
    pattern: new RegExp(
      `\\b(?:${WEEKDAY}\\s+)?(?:\\d{1,2}\\s+${MONTH}|${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?,?)(?:\\s+\\d{4})?,?\\s+(?:at\\s+)?${CLOCK}${ZONE}\\b`,
      'gi',
    ),
    mask: '[time]',
  },
  // A bare clock time with a zone ("10:00 UTC", "23:59:59Z").
  {
    kind: 'deadline',
    pattern: new RegExp(`\\b\\d{1,2}:\\d{2}(?::\\d{2})?\\s*(?:z|utc|gmt)\\b`, 'gi'),
    mask: '[time]',
  },
  // Epoch seconds or milliseconds: any next to a time word, and on their own those of 2001 to 2033.
  {
    kind: 'deadline',
    pattern:
      /\b(at|until|since|expires?|expiry|deadline|by|before|after|time|ts|timestamp|lease[_ ]?until|leaseUntil)(["']?\s*[=:]?\s*["']?)\d{10}(?:\d{3})?\b/gi,
    mask: '$1$2[time]',
  },
  { kind: 'deadline', pattern: /\b1\d{9}(\d{3})?\b/g, mask: '[time]' },
];

/**
 * The one function every model-bound text passes through. It removes fencing tokens, lease deadlines
 * (wall-clock times), credentials, connection strings and the tenant identifiers configured as
 * sensitive, and reports how many of each it removed.
 */
export function redact(text: string, sensitiveTenants: readonly string[] = []): Redacted {
  const counts: RedactionCounts = { token: 0, deadline: 0, credential: 0, connectionString: 0, tenant: 0 };
  let out = text;
  for (const tenant of sensitiveTenants.filter(Boolean)) {
    const pattern = new RegExp(tenant.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi');
    out = out.replace(pattern, () => (counts.tenant++, '[tenant]'));
  }
  for (const rule of RULES) {
    out = out.replace(rule.pattern, (...match: string[]) => {
      counts[rule.kind]++;
      return rule.mask.replace(/\$(\d)/g, (_, i: string) => match[Number(i)] ?? '');
    });
  }
  return { text: out, counts };
}

/** Total number of redactions in a count. */
export function redactionTotal(counts: RedactionCounts): number {
  return counts.token + counts.deadline + counts.credential + counts.connectionString + counts.tenant;
}
