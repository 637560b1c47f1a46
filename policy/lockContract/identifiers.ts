// Lock keys and requesters are identifiers: they end up in workflow ids, search attributes, UI
// summaries and logs, so each must be what it looks like. Pure; shared by every entry point through
// the schemas in lockSchemas.ts.

/** Why one character is refused in a name, by class. */
const REFUSED_CHARACTERS: { what: string; test: (codePoint: number) => boolean }[] = [
  { what: 'a control character', test: (c) => c <= 0x1f || (c >= 0x7f && c <= 0x9f) },
  {
    what: 'a bidirectional control',
    test: (c) =>
      (c >= 0x202a && c <= 0x202e) ||
      (c >= 0x2066 && c <= 0x2069) ||
      c === 0x200e ||
      c === 0x200f ||
      c === 0x061c,
  },
  {
    what: 'an invisible (zero-width) character',
    test: (c) => (c >= 0x200b && c <= 0x200d) || c === 0x2060 || c === 0xfeff || c === 0x00ad,
  },
  { what: 'a lone surrogate', test: (c) => c >= 0xd800 && c <= 0xdfff },
  { what: 'a line or paragraph separator', test: (c) => c === 0x2028 || c === 0x2029 },
];

const hex = (codePoint: number) => `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * The first reason `name` is not a usable identifier, or null: a refused character (named with its
 * position, counted in code points from 1, and its code point), or whitespace at either end.
 */
export function identifierProblem(name: string): string | null {
  let position = 0;
  // Iterating a string yields code points; a lone surrogate comes out on its own.
  for (const char of name) {
    position++;
    const codePoint = char.codePointAt(0)!;
    const refused = REFUSED_CHARACTERS.find((rule) => rule.test(codePoint));
    if (refused) return `character ${position} is ${hex(codePoint)}, ${refused.what}`;
  }
  if (name.trim() === '') return 'must not be only whitespace';
  if (name.trim() !== name) return 'must not start or end with whitespace';
  return null;
}

// What a credential or a connection string looks like, to keep one out of a requester id or a lock
// key (both are shown in workflow ids, the UI and logs, unmasked). A URL with no credential in it is
// a fine key (`s3://bucket/report`), not a fine requester.
const URL_WITH_SCHEME = { what: 'a URL with a scheme', pattern: /^[a-z][a-z0-9+.-]*:\/\//i };
const CREDENTIAL_SHAPES: { what: string; pattern: RegExp }[] = [
  { what: 'user:password@host', pattern: /[^\s:@/]+:[^\s@/]+@[^\s@]+/ },
  { what: 'a secret assignment', pattern: /\b(password|passwd|pwd|secret|api[_-]?key|token)\s*[=:]/i },
  { what: 'a bearer token', pattern: /\bbearer\s+\S{8,}/i },
  {
    what: 'an API key',
    pattern: /\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}/,
  },
];

/** Why `requester` looks like a credential or connection string (and so is refused), or null. */
export function credentialLookalike(requester: string): string | null {
  const shape = [URL_WITH_SCHEME, ...CREDENTIAL_SHAPES].find((s) => s.pattern.test(requester));
  return shape
    ? `looks like ${shape.what}; requester ids are shown unmasked in workflow ids, the UI and logs, so a secret must not be one`
    : null;
}

/** Why a lock key carries what looks like a credential (and so is refused in a request), or null. */
export function keyCredentialLookalike(key: string): string | null {
  const shape = CREDENTIAL_SHAPES.find((s) => s.pattern.test(key));
  return shape
    ? `looks like it holds ${shape.what}; keys are shown unmasked in workflow ids, the UI and logs, so a secret must not be in one`
    : null;
}

// Workflow ids: `lock/<key>/<requester>` and `release/<key>/<holder>/<token>`. Keys keep their `/`
// (`billing/nightly-export` stays readable); the parts after the key escape `%` and `/`, so the id
// splits unambiguously at its last slashes and distinct names never share an id.

/** Escapes `%` and `/` in one id segment: an injective, readable encoding. */
function escapeIdSegment(segment: string): string {
  return segment.replace(/%/g, '%25').replace(/\//g, '%2F');
}

/** The inverse of {@link escapeIdSegment}. */
function unescapeIdSegment(segment: string): string {
  return segment.replace(/%(25|2F)/g, (escape) => (escape === '%25' ? '%' : '/'));
}

/** The workflow id of the session of one requester on one key: at most one runs at a time. */
export function acquisitionWorkflowId(key: string, requester: string): string {
  return `lock/${key}/${escapeIdSegment(requester)}`;
}

/** The workflow id of a fenced force-release of one lease. */
export function releaseWorkflowId(key: string, holder: string, token: string): string {
  return `release/${key}/${escapeIdSegment(holder)}/${token}`;
}

/** The (key, requester) a session's workflow id names, or null for an id that is not one. */
export function parseAcquisitionWorkflowId(id: string): { key: string; requester: string } | null {
  if (!id.startsWith('lock/')) return null;
  const last = id.lastIndexOf('/');
  if (last <= 'lock/'.length) return null;
  return { key: id.slice('lock/'.length, last), requester: unescapeIdSegment(id.slice(last + 1)) };
}
