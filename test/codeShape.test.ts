import fs from 'node:fs';
import path from 'node:path';
import { importCycles, type ReadSource } from './support/importGraph';

// Rules of the session's code that the type checker alone does not keep: one owner of a session's
// state, no import cycle among the workflow modules, one place that continues a run as new.

const ROOT = path.join(__dirname, '..');
const WORKFLOWS = path.join(ROOT, 'workflows');

function sourcesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
}

// `session.x = …`, `session.x.y++`, `++session.x`, `session.x ??= …`, `session.x.push(…)`.
const SESSION_WRITE =
  /(?:\bsession(?:\.\w+)+\s*(?:[-+*/|&?]{0,2}=(?!=)|\+\+|--)|(?:\+\+|--)\s*session\.\w+|\bsession(?:\.\w+)+\.(?:push|pop|splice|shift|unshift)\()/;

/** Lines outside lockSession.ts that change a session's fields, as `file:line: text`. */
function sessionWrites(files: string[], read: (file: string) => string): string[] {
  return files
    .filter((file) => path.basename(file) !== 'lockSession.ts')
    .flatMap((file) =>
      read(file)
        .split('\n')
        .flatMap((line, i) =>
          SESSION_WRITE.test(line) ? [`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`] : [],
        ),
    );
}

const fromDisk = (file: string) => fs.readFileSync(file, 'utf8');

describe("a session's state has one owner", () => {
  it('no module outside lockSession.ts assigns to a session field', () => {
    expect(sessionWrites(sourcesUnder(WORKFLOWS), fromDisk)).toEqual([]);
  });

  it('catches each kind of planted write', () => {
    const planted = [
      'session.woken = false;',
      'session.state.attempts++;',
      '++session.state.attempts;',
      'session.deadlockNotice ??= notice;',
      'session.budget = { ...b };',
      'session.recentDecisions.push(d);',
    ];
    const file = path.join(WORKFLOWS, 'session', 'planted.ts');
    const found = sessionWrites([file], () => planted.join('\n'));
    expect(found).toHaveLength(planted.length);
    // Reads and comparisons are not writes.
    const reads = ['if (session.woken === true) x = 1;', 'const a = session.attempts;', 'f(session.state)'];
    expect(sessionWrites([file], () => reads.join('\n'))).toEqual([]);
  });
});

/** The rooms of product code: what the package ships and its bins run. */
const PRODUCT_ROOMS = [
  'workflows',
  'activities',
  'locks',
  'policy',
  'worker',
  'client',
  'temporal',
  'entrypoints',
];

describe('the workflow modules', () => {
  it('import one another without a cycle, type-only imports included', () => {
    const cycles = importCycles(sourcesUnder(WORKFLOWS)).map((c) =>
      c.map((f) => path.relative(ROOT, f)).join(' -> '),
    );
    expect(cycles).toEqual([]);
  });

  it('and so does all code, every room together with the benchmarks, the campaign and the scripts, type-only imports included', () => {
    const rooms = [...PRODUCT_ROOMS, 'bench', 'campaign', 'devkit', 'scripts'];
    const files = rooms.flatMap((room) => sourcesUnder(path.join(ROOT, room)));
    const cycles = importCycles(files).map((c) => c.map((f) => path.relative(ROOT, f)).join(' -> '));
    expect(cycles).toEqual([]);
  });

  it('catches a planted cycle made of a type-only import', () => {
    const a = path.join(WORKFLOWS, 'a.ts');
    const b = path.join(WORKFLOWS, 'b.ts');
    const files: Record<string, string> = {
      [a]: "import { b } from './b';\nexport const a = 1;",
      [b]: "import type { a } from './a';\nexport const b = 2;",
    };
    const read: ReadSource = (file) => files[file];
    expect(importCycles([a, b], read)).toEqual([[a, b, a]]);
  });

  it('continue as new in one place: the acquireLock workflow itself', () => {
    const callers = sourcesUnder(WORKFLOWS).filter((file) => /\bcontinueAsNew\b/.test(fromDisk(file)));
    expect(callers.map((f) => path.relative(ROOT, f))).toEqual(['workflows/acquireLock.ts']);
  });

  it('take the lease through the acquisition phase only: no other module makes a fast-path attempt', () => {
    expect(callersOf(/\btryFastPath\(/, WORKFLOWS, 'export async function tryFastPath(')).toEqual([
      'workflows/session/acquirePhase.ts',
    ]);
  });
});

// One owner per duty, written down where a maintainer looks first (docs/safety.md, "Who does what"):
// every call that can take or renew a lease, in all product code, is at one of these places.
const PRODUCT = ['activities', 'client', 'entrypoints', 'locks', 'policy', 'temporal', 'worker', 'workflows'];

/** Product files (relative paths) whose code, with `own` (a definition) cut out, matches `call`. */
function callersOf(
  call: RegExp,
  under: string | string[] = PRODUCT.map((d) => path.join(ROOT, d)),
  own = '',
) {
  const dirs = Array.isArray(under) ? under : [under];
  return dirs
    .flatMap(sourcesUnder)
    .filter((file) => call.test(fromDisk(file).replace(own, '')))
    .map((f) => path.relative(ROOT, f))
    .sort();
}

describe('one owner per duty: who takes and who renews a lease', () => {
  it("the lock service's grant is asked for by the two fast-path activities only", () => {
    // lockActivities.ts: tryAcquireLock; requestActivities.ts: the first attempt riding in the check.
    expect(callersOf(/\.tryAcquire\(/).filter((f) => !f.startsWith('locks/'))).toEqual([
      'activities/lockActivities.ts',
    ]);
    expect(callersOf(/\btryAcquire\(firstFastPathRequest/)).toEqual(['activities/requestActivities.ts']);
  });

  it("in workflow code, those activities are called from the acquisition phase's fast path only, which the phase counts", () => {
    expect(callersOf(/\b(?:tryAcquireLock|checkRequestAndTryAcquire)\.execute/)).toEqual([
      'workflows/session/fastPath.ts',
    ]);
    expect(callersOf(/\bsession\.(?:beginAttempt|countOpeningAttempt)\(/)).toEqual([
      'workflows/session/acquirePhase.ts',
      'workflows/session/fastPath.ts',
    ]);
  });

  it('renewal has one owner, the lease keeper; the sweep stands in for a keeper that fell silent', () => {
    // The fenced renewal is the only code that renews at a lock service...
    expect(callersOf(/\.renew\(/).filter((f) => !f.startsWith('locks/'))).toEqual([
      'activities/leaseActions.ts',
    ]);
    // ...the keeper and the sweep are the only code that calls it...
    expect(callersOf(/\brenewFenced\(/, undefined, 'export async function renewFenced(')).toEqual([
      'activities/leaseKeeper.ts',
      'worker/silentLeases.ts',
    ]);
    // ...and a session starts the keeper in its hold phase, nowhere else.
    expect(callersOf(/\bkeepLease\.execute/)).toEqual(['workflows/session/holdPhase.ts']);
  });
});
