// The pure checks behind "messages are claims": release keys, notice shapes, wake-ups, overtakings,
// token width, and what lockctl prints.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { printable, progressLine, table } from '../../client/present';
import { overtakingConfirmed } from '../../policy/lockContract/fairness';
import {
  fencingTokenSchema,
  forceReleaseSchema,
  MAX_FENCING_TOKEN,
} from '../../policy/lockContract/lockSchemas';
import { deadlockNoticeProblem, overtakingProblem } from '../../policy/sessionModel/noticeShapes';
import { releaseKeyDigest, releaseKeyProblem } from '../../policy/lockContract/releaseKey';
import { leaseOwnerProblem, type SessionState } from '../../policy/sessionModel/sessionTypes';
import { wakeChangedNothing } from '../../policy/decisions/waiting';

describe('the release key', () => {
  it("digests as SHA-256 of the key's UTF-8, the same in the workflow as in Node", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 16, maxLength: 128 }), (key) => {
        expect(releaseKeyDigest(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'));
      }),
    );
  });

  it('opens only the lease whose digest it matches, and nothing without a digest', () => {
    const key = 'a'.repeat(43);
    const digest = releaseKeyDigest(key);
    expect(releaseKeyProblem(key, digest)).toBeNull();
    expect(releaseKeyProblem('b'.repeat(43), digest)).toMatch(/not the release key/);
    expect(releaseKeyProblem(undefined, digest)).toMatch(/releaseKey: must be/);
    expect(releaseKeyProblem('short', digest)).toMatch(/releaseKey: must be/);
    expect(releaseKeyProblem(key, undefined)).toMatch(/force-release/);
  });

  it('a release names its lease and shows its key; a name alone is never enough', () => {
    const key = 'k'.repeat(43);
    const lease = { releaseKeyDigest: releaseKeyDigest(key) };
    const names = { key: 'x', holder: 'h' };
    expect(leaseOwnerProblem(names, key, 'x', 'h', lease)).toBeNull();
    expect(leaseOwnerProblem(names, undefined, 'x', 'h', lease)).toMatch(/releaseKey/);
    expect(leaseOwnerProblem({ key: 'x', holder: 'v' }, key, 'x', 'h', lease)).toMatch(/not "v" on "x"/);
    expect(leaseOwnerProblem({ ...names, releaseKey: key }, key, 'x', 'h', lease)).toMatch(/unknown field/);
    expect(leaseOwnerProblem(null, key, 'x', 'h', lease)).toMatch(/must be an object/);
    expect(leaseOwnerProblem(names, undefined, 'x', 'h', {})).toMatch(/force-release/);
    expect(leaseOwnerProblem(names, key, 'x', 'h', {})).toMatch(/force-release/);
  });
});

describe('notices sessions send each other', () => {
  const edge = { waiter: 'a', key: 'k', holder: 'b' };

  it('a deadlock notice of the documented shape passes; anything else is named', () => {
    expect(deadlockNoticeProblem({ cycle: 'a waits', escalator: 'a', edges: [edge] })).toBeNull();
    expect(deadlockNoticeProblem({ cycle: 'a waits', escalator: 'a' })).toBeNull();
    for (const bad of [
      null,
      {},
      'x',
      [],
      { cycle: '', escalator: 'a' },
      { cycle: 'c', escalator: 'e'.repeat(201) },
    ])
      expect(deadlockNoticeProblem(bad)).not.toBeNull();
    expect(deadlockNoticeProblem({ cycle: 'c', escalator: 'a', edges: [{ ...edge, key: 3 }] })).toMatch(
      /edges\.0/,
    );
    const many = Array.from({ length: 101 }, () => edge);
    expect(deadlockNoticeProblem({ cycle: 'c', escalator: 'a', edges: many })).toMatch(/at most 100/);
  });

  it('an overtaking notice must name this waiter and key, with the later arrival later', () => {
    const ok = { key: 'k', waiter: 'w', waiterSince: 10, overtakenBy: 'o', overtakerSince: 20 };
    expect(overtakingProblem(ok, 'k', 'w')).toBeNull();
    expect(overtakingProblem(ok, 'k', 'other')).toMatch(/this session/);
    expect(overtakingProblem({ ...ok, overtakerSince: 5 }, 'k', 'w')).toMatch(/later than/);
    expect(overtakingProblem({ ...ok, waiterSince: 'x' }, 'k', 'w')).toMatch(/times/);
    expect(overtakingProblem({}, 'k', 'w')).not.toBeNull();
  });

  it('an overtaking is confirmed only by the service: this waiter queued since then, the arrival ahead or holding', () => {
    const claim = { key: 'k', waiter: 'w', waiterSince: 10, overtakenBy: 'o', overtakerSince: 20 };
    const queue = [
      { requester: 'o', priority: 0, since: 20 },
      { requester: 'w', priority: 0, since: 10 },
    ];
    expect(overtakingConfirmed(claim, { holder: 'h', queue })).toBe(true);
    expect(overtakingConfirmed(claim, { holder: 'o', queue: queue.slice(1) })).toBe(true);
    // The arrival is not ahead, the waiter is not queued, or its time is not the service's.
    expect(overtakingConfirmed(claim, { holder: 'h', queue: [...queue].reverse() })).toBe(false);
    expect(overtakingConfirmed(claim, { holder: 'h', queue: queue.slice(0, 1) })).toBe(false);
    expect(overtakingConfirmed({ ...claim, waiterSince: 11 }, { holder: 'o', queue: queue.slice(1) })).toBe(
      false,
    );
    expect(overtakingConfirmed(claim, { holder: 'h', queue: [{ ...queue[0]!, since: 5 }, queue[1]!] })).toBe(
      false,
    );
  });

  it('a wake-up changed nothing when the same holder holds and the waiter did not move up', () => {
    const at = (holder: string | null, position: number | null, holderLeaseUntil = 1) => ({
      holder,
      position,
      holderLeaseUntil,
    });
    expect(wakeChangedNothing(at('h', 2), at('h', 2, 99))).toBe(true);
    expect(wakeChangedNothing(at('h', 2), at('h', 3))).toBe(true);
    expect(wakeChangedNothing(at('h', 2), at('h', 1))).toBe(false);
    expect(wakeChangedNothing(at('h', 2), at('g', 2))).toBe(false);
    expect(wakeChangedNothing(at('h', 2), at(null, 1))).toBe(false);
    expect(wakeChangedNothing(null, at('h', 2))).toBe(false);
  });
});

describe('what crosses from outside', () => {
  it('a token fits what every fenced resource stores: a signed 64-bit integer', () => {
    expect(fencingTokenSchema.safeParse(String(MAX_FENCING_TOKEN)).success).toBe(true);
    expect(fencingTokenSchema.safeParse(String(MAX_FENCING_TOKEN + 1n)).success).toBe(false);
    expect(fencingTokenSchema.safeParse('12345678901234567890').success).toBe(false);
    expect(fencingTokenSchema.safeParse('not-a-token').success).toBe(false);
  });

  it('a force-release says why', () => {
    const target = { key: 'k', holder: 'h', token: '7' };
    expect(forceReleaseSchema.parse({ ...target, reason: ' holder gone ' })).toMatchObject({
      reason: 'holder gone',
    });
    expect(forceReleaseSchema.safeParse({ ...target, reason: '  ' }).success).toBe(false);
    // Required of every caller, the releaseLock workflow started by hand included.
    expect(forceReleaseSchema.safeParse(target).error?.issues[0]).toMatchObject({ path: ['reason'] });
    expect(forceReleaseSchema.safeParse({ ...target, reason: 'x'.repeat(501) }).success).toBe(false);
  });

  it('lockctl prints no control, bidirectional or invisible character as it is', () => {
    const hostile = 'h\u001b[2J\u001b]0;pwned\u0007\u009b\u202e\u200b';
    for (const shown of [printable(hostile), table(['HOLDER'], [[hostile]])])
      expect(shown).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e]/);
    expect(printable(hostile)).toBe('h\\u001b[2J\\u001b]0;pwned\\u0007\\u009b\\u202e\\u200b');
    expect(JSON.parse(printable(JSON.stringify({ h: hostile })))).toEqual({ h: hostile });
    const state = { phase: 'escalated', attempts: 1, place: null, holder: null, decisions: [] } as unknown;
    const escalated = { ...(state as SessionState), escalation: { reason: hostile } } as SessionState;
    expect(progressLine(escalated, 10)).not.toContain('\u001b');
  });
});
