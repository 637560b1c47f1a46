import fc from 'fast-check';
import { redact } from '../../policy/textSafety/redaction';

// Property tests of redact(): variants of the forms people write tokens, wall-clock times and
// credentials in are generated, and none may survive. Each property runs RUNS cases.
const RUNS = 500;

/** Surrounding prose, so a form is found inside a sentence as well as on its own. */
const around = fc.constantFrom(
  ['', ''],
  ['lease lost: ', ' (see log)'],
  ['{"event":"renew",', '}'],
  ['holder replica-a; ', '; retrying'],
);

/** A name written in any case: lower, upper, or first letter up. */
const anyCase = (name: string) =>
  fc.constantFrom(name, name.toUpperCase(), name[0]!.toUpperCase() + name.slice(1));

const standsAlone = (text: string, digits: string) => new RegExp(`(?<!\\d)${digits}(?!\\d)`).test(text);

describe('redact(): tokens, times and credentials in the forms people write', () => {
  it('masks a fencing token whatever its name, separator, quoting and case', () => {
    const name = fc
      .constantFrom(
        'token',
        'tok',
        'fencing',
        'fence',
        'fencing_token',
        'fencingToken',
        'fencing-token',
        'lease_token',
      )
      .chain(anyCase);
    const separator = fc.constantFrom('=', ' = ', ':', ': ', ' is ', ' was ', ' #', ' ', ' no. ');
    const quoting = fc.constantFrom('none', 'value', 'json');
    const value = fc.bigInt({ min: 1n, max: 10n ** 15n }).map(String);
    fc.assert(
      fc.property(name, separator, quoting, value, around, (n, sep, q, v, [before, after]) => {
        const written =
          q === 'json' ? `"${n}": "${v}"` : q === 'value' ? `${n}${sep}"${v}"` : `${n}${sep}${v}`;
        const out = redact(before + written + after).text;
        expect(standsAlone(out, v)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it('masks a wall-clock time in ISO 8601, RFC 2822, "Dec 2 10:00 UTC" and epoch forms', () => {
    const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
    const when = fc.date({
      min: new Date('2001-09-10T00:00:00Z'),
      max: new Date('2033-05-17T00:00:00Z'),
      noInvalidDate: true,
    });
    const hhmm = (d: Date) => d.toISOString().slice(11, 16);
    const forms: ((d: Date) => string)[] = [
      (d) => d.toISOString(),
      (d) => d.toISOString().replace('T', ' ').slice(0, 19),
      (d) => d.toISOString().replace('T', ' ').replace('Z', ' +00:00'),
      (d) => d.toUTCString(), // RFC 2822: "Wed, 02 Dec 2026 10:00:00 GMT"
      (d) => `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()} ${hhmm(d)} UTC`,
      (d) => `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${hhmm(d)}`,
      (d) => `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}, ${d.getUTCFullYear()} at ${hhmm(d)} GMT`,
      (d) => `${hhmm(d)} UTC`,
      (d) => `expires ${Math.floor(d.getTime() / 1000)}`,
      (d) => `leaseUntil=${d.getTime()}`,
      (d) => String(d.getTime()),
    ];
    fc.assert(
      fc.property(when, fc.nat(forms.length - 1), around, (d, form, [before, after]) => {
        const out = redact(before + forms[form]!(d) + after).text;
        expect(out).not.toMatch(/\d{1,2}:\d{2}/);
        expect(out).not.toMatch(/\d{10}/);
      }),
      { numRuns: RUNS },
    );
  });

  it('masks credentials: user:password@host with or without a scheme, bearer tokens, API keys', () => {
    const user = fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/);
    const password = fc.stringMatching(/^[A-Za-z0-9!#$%^&*_-]{6,20}$/).map((p) => `Pw${p}`);
    const host = fc.oneof(
      fc.ipV4(),
      fc.constantFrom('db.internal', 'cache', 'redis-0.redis.svc.cluster.local'),
    );
    const port = fc.option(fc.integer({ min: 1, max: 65_535 }), { nil: undefined });
    const scheme = fc.constantFrom('', 'redis://', 'postgres://', 'postgresql://', 'amqp://', 'https://');
    fc.assert(
      fc.property(user, password, host, port, scheme, around, (u, p, h, pt, s, [before, after]) => {
        const out = redact(`${before}${s}${u}:${p}@${h}${pt ? `:${pt}` : ''}${after}`).text;
        expect(out).not.toContain(p);
      }),
      { numRuns: RUNS },
    );
    const secret = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9]{24,40}$/).map((s) => ({ written: `Bearer ${s}`, secret: s })),
      fc.stringMatching(/^[A-Za-z0-9_-]{20,40}$/).map((s) => ({ written: `sk-ant-${s}`, secret: s })),
      fc.stringMatching(/^[0-9A-Z]{16}$/).map((s) => ({ written: `AKIA${s}`, secret: s })),
      fc.stringMatching(/^[A-Za-z0-9]{36}$/).map((s) => ({ written: `ghp_${s}`, secret: s })),
      fc
        .tuple(
          fc.constantFrom('api_key', 'apiKey', 'password', 'client_secret'),
          fc.stringMatching(/^[A-Za-z0-9]{8,24}$/),
        )
        .chain(([k, s]) =>
          fc.constantFrom(
            { written: `${k}=${s}`, secret: s },
            { written: `"${k}": "${s}"`, secret: s },
            { written: `${k}: '${s}'`, secret: s },
          ),
        ),
    );
    fc.assert(
      fc.property(secret, around, ({ written, secret: s }, [before, after]) => {
        expect(redact(before + written + after).text).not.toContain(s);
      }),
      { numRuns: RUNS },
    );
  });

  it('leaves the ordinary words of a lock situation alone', () => {
    const plain =
      'lock held by another client; billing/nightly-export held by replica-a, place 3 of 12, 250 ms';
    expect(redact(plain)).toEqual({
      text: plain,
      counts: { token: 0, deadline: 0, credential: 0, connectionString: 0, tenant: 0 },
    });
  });
});
