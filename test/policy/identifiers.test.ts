import fc from 'fast-check';
import { parseAcquireRequest } from '../../policy/decisions/acquireRequest';
import { InvalidLockRequestError } from '../../policy/errors';
import {
  acquisitionWorkflowId,
  credentialLookalike,
  keyCredentialLookalike,
  identifierProblem,
  parseAcquisitionWorkflowId,
  releaseWorkflowId,
} from '../../policy/lockContract/identifiers';

const RUNS = 1_000;

/** Names as callers write them: slashes, percent signs and the odd escape included, all valid. */
const name = fc.stringMatching(/^[a-zA-Z0-9/%._:-]{1,24}$/).filter((s) => identifierProblem(s) === null);

describe('session identity: workflow ids are an injective encoding of the names', () => {
  it('never gives two distinct (key, requester) pairs the same session id', () => {
    fc.assert(
      fc.property(name, name, name, name, (k1, r1, k2, r2) => {
        fc.pre(k1 !== k2 || r1 !== r2);
        expect(acquisitionWorkflowId(k1, r1)).not.toBe(acquisitionWorkflowId(k2, r2));
      }),
      { numRuns: RUNS },
    );
  });

  it('reads the names back from a session id', () => {
    fc.assert(
      fc.property(name, name, (key, requester) => {
        expect(parseAcquisitionWorkflowId(acquisitionWorkflowId(key, requester))).toEqual({ key, requester });
      }),
      { numRuns: RUNS },
    );
  });

  it('never gives two distinct (key, holder, token) leases the same release id', () => {
    const token = fc.bigInt({ min: 1n, max: 10n ** 12n }).map(String);
    fc.assert(
      fc.property(name, name, token, name, name, token, (k1, h1, t1, k2, h2, t2) => {
        fc.pre(k1 !== k2 || h1 !== h2 || t1 !== t2);
        expect(releaseWorkflowId(k1, h1, t1)).not.toBe(releaseWorkflowId(k2, h2, t2));
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps ordinary names readable, and tells apart the pair that used to collide', () => {
    expect(acquisitionWorkflowId('billing/nightly-export', 'replica-b')).toBe(
      'lock/billing/nightly-export/replica-b',
    );
    expect(acquisitionWorkflowId('a/b', 'c')).toBe('lock/a/b/c');
    expect(acquisitionWorkflowId('a', 'b/c')).toBe('lock/a/b%2Fc');
    expect(releaseWorkflowId('a', 'b/c', '7')).not.toBe(releaseWorkflowId('a/b', 'c', '7'));
  });
});

describe('names are what they look like', () => {
  const refused: [string, string, string][] = [
    ['right-to-left override', 'invoice\u202Efdp.exe', 'character 8 is U+202E, a bidirectional control'],
    ['left-to-right isolate', '\u2066key', 'character 1 is U+2066, a bidirectional control'],
    ['zero-width space', 'billing\u200Bexport', 'character 8 is U+200B, an invisible (zero-width) character'],
    ['byte-order mark', '\uFEFFkey', 'character 1 is U+FEFF, an invisible (zero-width) character'],
    ['lone surrogate', 'key\uD800', 'character 4 is U+D800, a lone surrogate'],
    ['control character', 'key\u0007', 'character 4 is U+0007, a control character'],
    ['whitespace only', '   ', 'must not be only whitespace'],
    ['leading space', ' key', 'must not start or end with whitespace'],
    ['trailing space', 'key ', 'must not start or end with whitespace'],
  ];

  it.each(refused)('refuses a %s, naming the position and code point', (_, bad, problem) => {
    expect(identifierProblem(bad)).toBe(problem);
    for (const field of ['key', 'requester'] as const) {
      const request = { key: 'k', requester: 'r', [field]: bad };
      expect(() => parseAcquireRequest(request)).toThrow(InvalidLockRequestError);
      expect(() => parseAcquireRequest(request)).toThrow(`${field}: ${problem}`);
    }
  });

  it('counts positions in code points, so a character outside the BMP is one', () => {
    expect(identifierProblem('🔒\u202E')).toBe('character 2 is U+202E, a bidirectional control');
    expect(identifierProblem('🔒 lock/ключ/鍵')).toBeNull();
  });

  it.each([
    ['postgres://locks:s3cret@db.internal/locks', 'a URL with a scheme'],
    ['admin:hunter2@10.0.0.5:6379', 'user:password@host'],
    ['password=hunter2', 'a secret assignment'],
    ['Bearer abcdefghijklmnop', 'a bearer token'],
    ['sk-ant-api03-abcdefghijkl', 'an API key'],
  ])('refuses a requester that looks like a credential: %s', (requester, what) => {
    expect(credentialLookalike(requester)).toContain(what);
    expect(() => parseAcquireRequest({ key: 'k', requester })).toThrow(
      `requester: looks like ${what}; requester ids are shown unmasked`,
    );
  });

  it.each([
    ['postgres://admin:hunter2@db/x', 'user:password@host'],
    ['jobs/api_key=abc123/nightly', 'a secret assignment'],
    ['tenant/sk-ant-api03-abcdefghijkl', 'an API key'],
  ])('refuses a key that holds a credential: %s', (key, what) => {
    expect(keyCredentialLookalike(key)).toContain(what);
    expect(() => parseAcquireRequest({ key, requester: 'r' })).toThrow(
      `key: looks like it holds ${what}; keys are shown unmasked`,
    );
  });

  it('accepts the keys people use, URLs without credentials among them', () => {
    for (const key of [
      'billing/nightly-export',
      's3://reports/2026-12/daily.csv',
      'https://api.example.com/v1/orders',
      'tenant:42/invoices',
    ]) {
      expect(keyCredentialLookalike(key)).toBeNull();
      expect(parseAcquireRequest({ key, requester: 'r' }).key).toBe(key);
    }
  });

  it('accepts the requesters people use', () => {
    for (const requester of [
      'replica-b',
      'worker-7@host-3',
      'job:nightly',
      'billing/export#42',
      'pod-abc.ns',
    ]) {
      expect(credentialLookalike(requester)).toBeNull();
      expect(parseAcquireRequest({ key: 'billing/nightly-export', requester }).requester).toBe(requester);
    }
  });
});
