import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TEMPORAL_ADDRESS } from './support/temporalFixture';

// The CLI refuses bad names with the same rules as every other entry, says why, and exits 2.
const run = promisify(execFile);
const ROOT = path.join(__dirname, '..');

async function lockctl(...args: string[]): Promise<{ code: number; stderr: string }> {
  const tsx = path.join(ROOT, 'node_modules', '.bin', 'tsx');
  return run(tsx, ['client/lockctl.ts', '--address', TEMPORAL_ADDRESS, ...args], { cwd: ROOT }).then(
    () => ({ code: 0, stderr: '' }),
    (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
  );
}

describe('lockctl at the boundary', () => {
  const cases: [string, string[], string][] = [
    [
      'a key with a right-to-left override',
      ['acquire', 'invoice\u202Efdp', '--requester', 'r', '--no-wait'],
      'key: character 8 is U+202E, a bidirectional control',
    ],
    [
      'a requester that is a connection string',
      ['acquire', 'k', '--requester', 'admin:hunter2@10.0.0.5:6379', '--no-wait'],
      'requester: looks like user:password@host',
    ],
    [
      'a key that holds a connection string with its password',
      ['acquire', 'postgres://admin:hunter2@db/x', '--requester', 'r', '--no-wait'],
      'key: looks like it holds user:password@host',
    ],
    [
      'a TTL of 0 (not the default in disguise)',
      ['acquire', 'k', '--requester', 'r', '--ttl-ms', '0', '--no-wait'],
      'ttlMs: must be greater than 0',
    ],
    [
      'a holder with a zero-width space',
      ['release', 'k', '--holder', 'zero\u200Bwidth'],
      'holder: character 5 is U+200B, an invisible (zero-width) character',
    ],
    [
      'a pin that is not <deployment>:<build id>',
      ['--pin', 'lockwarden.0.2.0', 'acquire', 'k', '--requester', 'r', '--no-wait'],
      'expected <deployment>:<build id>, got "lockwarden.0.2.0"',
    ],
    [
      'a pin whose deployment name holds a dot',
      ['--pin', 'lock.warden:0.2.0', 'acquire', 'k', '--requester', 'r', '--no-wait'],
      'deployment: no dots, colons or spaces',
    ],
    [
      'a token with a leading zero',
      ['force-release', 'k', '--holder', 'h', '--token', '01', '--reason', 'gone'],
      'token: must be a positive decimal integer',
    ],
  ];
  const badGates = path.join(os.tmpdir(), `lockctl-gates-${process.pid}.yaml`);
  const goodGates = path.join(os.tmpdir(), `lockctl-good-gates-${process.pid}.yaml`);
  beforeAll(() => {
    fs.writeFileSync(badGates, 'canaryPercent: [10, 50]\nsoakMinutes: 30\nabort: { p99WaitMs: 2000 }\n');
    fs.writeFileSync(
      goodGates,
      'canaryPercent: [10, 100]\nsoakMinutes: 30\nabort: { p99WaitMs: 2000 }\nrollback: { deployment: lockwarden, previousBuildId: 0.1.0 }\n',
    );
  });
  afterAll(() => [badGates, goodGates].forEach((f) => fs.rmSync(f, { force: true })));
  const postmortem = ['postmortem', 'billing/nightly-export', '--firm', 'F', '--stakeholder', 'S'];
  cases.push(
    ['a post-mortem without gates', postmortem, '--gates: is required'],
    [
      'a post-mortem whose gates file is missing',
      [...postmortem, '--gates', '/nonexistent.yaml'],
      '--gates: cannot read /nonexistent.yaml',
    ],
    [
      'a post-mortem whose canary stops short of 100%',
      [...postmortem, '--gates', badGates],
      'canaryPercent: must end at 100',
    ],
    [
      'a post-mortem whose patch is neither a file nor a commit range',
      [...postmortem, '--gates', goodGates, '--patch', 'the-fix'],
      '--patch: the-fix is neither a readable file nor a commit range',
    ],
    [
      'a post-mortem whose patch range git does not know',
      [...postmortem, '--gates', goodGates, '--patch', 'deadbee..cafef00'],
      '--patch: git log --no-merges',
    ],
    [
      'a post-mortem whose labelled evidence is missing',
      [...postmortem, '--gates', goodGates, '--evidence', 'before=/nonexistent.md'],
      '--evidence: cannot read /nonexistent.md',
    ],
    [
      'a post-mortem in an unknown format',
      [...postmortem, '--gates', badGates, '--format', 'pdf'],
      '--format: ',
    ],
  );

  it.each(cases)(
    'refuses %s, naming the field, with exit code 2 (and never echoes a secret)',
    async (_, args, problem) => {
      const { code, stderr } = await lockctl(...args);
      expect(code).toBe(2);
      expect(stderr).toContain(problem);
      expect(stderr).not.toContain('hunter2');
    },
    30_000,
  );
});
