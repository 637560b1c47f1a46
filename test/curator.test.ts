// A JVM service on Apache Curator's InterProcessMutex and lockwarden sessions contend for one key on a
// real ZooKeeper: each writes its holds to one shared log, and no two holds overlap.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { acquire, release } from '../client/lockwardenClient';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import { layoutOf } from '../locks/zookeeperLayout';
import { parseZookeeperUrl, type ZookeeperTarget } from '../locks/zookeeperUrl';
import { freshSqlitePath } from '../devkit/tempFiles';
import { SERVER_URLS } from './support/lockBackends';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

const SCRIPT = path.join(__dirname, '..', 'scripts', 'curator-contender.sh');
const { connectString, root } = parseZookeeperUrl(SERVER_URLS.zookeeper) as ZookeeperTarget;
// The path a Curator client names for a lockwarden key: the one lockwarden's leases live under.
const curatorPathOf = (key: string) => layoutOf(root).lockPath(key);

/** A Curator process taking the key's InterProcessMutex `holds` times, logging each hold to `log`. */
function curatorContender(
  key: string,
  name: string,
  log: string,
  holds: number,
  holdMs: number,
  pauseMs: number,
) {
  const child = spawn(
    'bash',
    [
      SCRIPT,
      'run',
      connectString,
      curatorPathOf(key),
      name,
      log,
      String(holds),
      String(holdMs),
      String(pauseMs),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const ended = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  return {
    child,
    ended,
    asking: () => (out.match(/^asking /gm) ?? []).length,
    held: () => (out.match(/^held /gm) ?? []).length,
    stderr: () => err,
  };
}

/**
 * The holds a shared log records, checked: every "acquired X" is followed by "released X" before any
 * other line, so no hold began while another was on. Appends with O_APPEND are ordered as made, and
 * each side appends only while it holds. `switches` counts the hand-offs between Curator and lockwarden.
 */
function holdsIn(log: string): {
  holds: number;
  byHolder: Map<string, number>;
  overlaps: string[];
  switches: number;
} {
  const lines = fs.readFileSync(log, 'utf8').trim().split('\n');
  const byHolder = new Map<string, number>();
  const overlaps: string[] = [];
  let open: string | null = null;
  let previous: string | null = null;
  let switches = 0;
  lines.forEach((line, i) => {
    const [event, holder] = line.split(' ') as [string, string];
    if (event === 'acquired') {
      if (open !== null) overlaps.push(`line ${i + 1}: ${holder} acquired while ${open} held`);
      open = holder;
      byHolder.set(holder, (byHolder.get(holder) ?? 0) + 1);
      if (previous !== null && previous.startsWith('curator') !== holder.startsWith('curator')) switches++;
      previous = holder;
    } else {
      if (open !== holder) overlaps.push(`line ${i + 1}: ${holder} released while ${open ?? 'no one'} held`);
      open = null;
    }
  });
  return { holds: [...byHolder.values()].reduce((a, b) => a + b, 0), byHolder, overlaps, switches };
}

describe('lockwarden and Apache Curator on one ZooKeeper key', () => {
  const fixture = sessionFixture();
  let locks: LockService;
  const running: ChildProcess[] = [];

  beforeAll(async () => {
    execFileSync('bash', [SCRIPT, 'build'], { stdio: 'ignore' });
    locks = await openLockService(SERVER_URLS.zookeeper);
  }, 300_000);
  afterAll(async () => {
    for (const child of running) child.kill('SIGKILL');
    await locks?.close();
  });

  it('[zookeeper] sees a Curator holder as an outsider with no token and no deadline, and takes the key once it lets go', async () => {
    const key = unique('curator-outsider');
    const log = freshSqlitePath().replace(/\.sqlite$/, '.log');
    // Held long enough for the checks below on a loaded machine; the test waits for its end anyway.
    const curator = curatorContender(key, 'curator', log, 1, 8_000, 0);
    running.push(curator.child);
    await waitFor('Curator holds the key', async () => curator.held() === 1, 60_000);
    const attempt = await locks.tryAcquire({ key, requester: 'lockwarden-a', ttlMs: 30_000 });
    expect(attempt.granted).toBe(false);
    if (attempt.granted) return;
    expect(attempt.denial).toMatchObject({ code: 'HELD', holderLeaseUntil: null });
    expect(attempt.denial.holder).toMatch(/^curator:_c_[0-9a-f-]{36}-lock-\d{10}$/);
    expect(await locks.inspect(key)).toMatchObject({
      token: null,
      leaseUntil: null,
      waiters: ['lockwarden-a'],
    });
    expect(await curator.ended).toBe(0);
    const after = await locks.tryAcquire({ key, requester: 'lockwarden-a', ttlMs: 30_000 });
    expect(after.granted).toBe(true);
    if (after.granted) await locks.release(after.lease);
  }, 120_000);

  it('[zookeeper] excludes each other: two Curator processes and three lockwarden sessions, no two holds overlap', async () => {
    const key = unique('curator-shared');
    const log = freshSqlitePath().replace(/\.sqlite$/, '.log');
    let curators: ReturnType<typeof curatorContender>[] = [];
    // The first lockwarden hold starts the Curator processes and lasts until both have asked for
    // the lock, so their first acquire meets a lockwarden lease; later holds meet whatever the
    // contention brings.
    const firstHold = async () => {
      curators = ['curator-1', 'curator-2'].map((name) => curatorContender(key, name, log, 6, 200, 1_000));
      running.push(...curators.map((c) => c.child));
      await waitFor(
        'both Curator processes asking',
        async () => curators.every((c) => c.asking() > 0),
        60_000,
      );
      await delay(500);
    };
    await withWorker(fixture.env, { locks, log: silentLog }, async (taskQueue) => {
      const session = async (name: string) => {
        for (let i = 0; i < 4; i++) {
          const held = await acquire(fixture.env.client, { key, requester: unique(name) }, { taskQueue });
          fs.appendFileSync(log, `acquired ${name}\n`);
          await (curators.length === 0 ? firstHold() : delay(300));
          fs.appendFileSync(log, `released ${name}\n`);
          await release(fixture.env.client, held.lease);
        }
      };
      await Promise.all(['lockwarden-1', 'lockwarden-2', 'lockwarden-3'].map(session));
    });
    const codes = await Promise.all(curators.map((c) => c.ended));
    expect(codes).toEqual([0, 0]);
    const { holds, byHolder, overlaps, switches } = holdsIn(log);
    const each = [...byHolder].map(([h, n]) => `${h} ${n}`).join(', ');
    console.log(
      `[zookeeper] holds in the shared log: ${holds} (${each}); Curator/lockwarden hand-offs: ${switches}`,
    );
    expect(overlaps).toEqual([]);
    // They contended: the key went from lockwarden to Curator and back at least.
    expect(switches).toBeGreaterThanOrEqual(2);
    expect(Object.fromEntries(byHolder)).toEqual({
      'curator-1': 6,
      'curator-2': 6,
      'lockwarden-1': 4,
      'lockwarden-2': 4,
      'lockwarden-3': 4,
    });
  }, 300_000);
});
