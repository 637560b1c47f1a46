/** What one pass of redaction removed, by kind; counted in logs, never printed. */
export interface RedactionCounts {
  token: number;
  deadline: number;
  credential: number;
  connectionString: number;
  tenant: number;
}

/** Text made safe for a model, and what was taken out of it. */
export interface Redacted {
  text: string;
  counts: RedactionCounts;
}

// Order matters: connection strings carry credentials, so they go first and whole.
const RULES: { kind: keyof RedactionCounts; pattern: RegExp; mask: string }[] = [
  { kind: 'connectionString', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s'"]+/gi, mask: '[connection-string]' },
  { kind: 'credential', pattern: /\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, mask: '$1 [credential]' },
  { kind: 'credential', pattern: /\bsk-[A-Za-z0-9_-]{8,}/g, mask: '[credential]' },
  {
    kind: 'credential',
    pattern: /\b(password|passwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token)\s*[=:]\s*\S+/gi,
    mask: '$1=[credential]',
  },
  {
    kind: 'token',
    pattern: /\b(fencing[_ ]?token|token)(\s*(?:[=:#]|is|was)?\s*)\d+\b/gi,
    mask: '$1$2[token]',
  },
  {
    kind: 'deadline',
    pattern: /\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?/g,
    mask: '[time]',
  },
  { kind: 'deadline', pattern: /\b1\d{9}(\d{3})?\b/g, mask: '[time]' }, // epoch seconds or milliseconds
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
