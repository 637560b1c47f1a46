import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { LockService } from '../../locks/lockService';
import { SqliteFencedResource } from '../../locks/sqliteFencedResource';
import { freshSqlitePath, unique } from '../../devkit/tempFiles';

/** The shape of one stress run. */
export interface StressPlan {
  clients: number;
  attemptsPerClient: number;
  keys: number;
}

interface Hold {
  key: string;
  token: bigint;
  requester: string;
  /** Caller-observed interval inside the true hold: from the grant's answer to the release's request. */
  observedFrom: number;
  observedTo: number;
  grantedAt: number;
  releasedAt: number;
}

/** What a stress run saw, and every violation of the contract it found (empty lists when none). */
export interface StressReport {
  attempts: number;
  grants: number;
  denials: number;
  writesAccepted: number;
  writesRefusedWhileHolding: number;
  staleWritesRefused: number;
  staleWritesAcceptedAsNewest: number;
  overlaps: string[];
  duplicateTokens: string[];
  outOfOrderWrites: string[];
  summary: string;
}

/**
 * Many clients contend for a few keys with random holds and releases. Half use FIFO (keeping their
 * place for a few tries, then leaving), half waive fairness. Every holder writes through a
 * FencedResource with its token, and some write again with their old token after releasing. The
 * report lists overlapping holds, reused tokens and writes that landed out of token order.
 */
export async function runStress(locks: LockService, plan: StressPlan): Promise<StressReport> {
  const keys = Array.from({ length: plan.keys }, () => unique(`stress-${locks.backend}`));
  const db = new Database(freshSqlitePath());
  db.exec(
    'CREATE TABLE writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, resource TEXT NOT NULL, token INTEGER NOT NULL)',
  );
  const fenced = new SqliteFencedResource(db);
  const logWrite = db.prepare('INSERT INTO writes (resource, token) VALUES (?, ?)');
  const holds: Hold[] = [];
  const counts = {
    attempts: 0,
    grants: 0,
    denials: 0,
    writesAccepted: 0,
    writesRefusedWhileHolding: 0,
    staleRefused: 0,
    staleAccepted: 0,
  };
  const pick = () => keys[Math.floor(Math.random() * keys.length)]!;

  await Promise.all(
    Array.from({ length: plan.clients }, async (_, i) => {
      const requester = `client-${i}`;
      const fairness = i % 2 === 0 ? 'FIFO' : 'no-starvation-guarantee';
      let key = pick();
      let triesOnKey = 0;
      for (let n = 0; n < plan.attemptsPerClient; n++) {
        counts.attempts++;
        const attempt = await locks.tryAcquire({ key, requester, ttlMs: 10_000, fairness });
        if (!attempt.granted) {
          counts.denials++;
          if (fairness !== 'FIFO' || ++triesOnKey > 5) {
            if (fairness === 'FIFO') await locks.leave({ key, requester });
            key = pick();
            triesOnKey = 0;
          }
          await delay(Math.random() * 3);
          continue;
        }
        counts.grants++;
        const { lease } = attempt;
        const observedFrom = performance.now();
        const write = await fenced.write(key, lease.token, () => logWrite.run(key, lease.token));
        if (write.accepted) counts.writesAccepted++;
        else counts.writesRefusedWhileHolding++;
        await delay(Math.random() * 2);
        const observedTo = performance.now();
        const released = await locks.release(lease);
        if (!released.ok) throw new Error(`${requester} could not release ${key}: ${released.reason}`);
        holds.push({
          key,
          token: BigInt(lease.token),
          requester,
          observedFrom,
          observedTo,
          grantedAt: lease.grantedAt,
          releasedAt: released.serviceTime,
        });
        if (Math.random() < 0.25) {
          // A holder that has let go and writes again with its old token: refused once anyone newer wrote.
          await delay(Math.random() * 3);
          const stale = await fenced.write(key, lease.token, () => logWrite.run(key, lease.token));
          if (stale.accepted) counts.staleAccepted++;
          else counts.staleRefused++;
        }
        key = pick();
        triesOnKey = 0;
      }
    }),
  );

  const overlaps: string[] = [];
  const duplicateTokens: string[] = [];
  for (const key of keys) {
    const ofKey = holds.filter((h) => h.key === key).sort((a, b) => a.observedFrom - b.observedFrom);
    const seen = new Set<bigint>();
    for (const [index, hold] of ofKey.entries()) {
      if (seen.has(hold.token)) duplicateTokens.push(`${key}: token ${hold.token} granted twice`);
      seen.add(hold.token);
      const previous = ofKey[index - 1];
      if (!previous) continue;
      if (hold.observedFrom < previous.observedTo)
        overlaps.push(`${key}: ${hold.requester} held it while ${previous.requester} did`);
      if (hold.token <= previous.token)
        duplicateTokens.push(`${key}: token ${hold.token} granted after ${previous.token}`);
      // Backends with a service clock also show it on that clock (etcd's reported times are estimates).
      if (locks.backend !== 'etcd' && hold.grantedAt < previous.releasedAt) {
        overlaps.push(
          `${key}: granted to ${hold.requester} at ${hold.grantedAt}, before ${previous.requester} released at ${previous.releasedAt}`,
        );
      }
    }
  }
  const outOfOrderWrites: string[] = [];
  const writes = db.prepare('SELECT resource, token FROM writes ORDER BY seq').safeIntegers(true).all() as {
    resource: string;
    token: bigint;
  }[];
  const newest = new Map<string, bigint>();
  for (const w of writes) {
    if ((newest.get(w.resource) ?? 0n) > w.token)
      outOfOrderWrites.push(`${w.resource}: token ${w.token} written after ${newest.get(w.resource)}`);
    newest.set(w.resource, w.token > (newest.get(w.resource) ?? 0n) ? w.token : newest.get(w.resource)!);
  }
  db.close();
  const summary =
    `${counts.attempts} attempts, ${counts.grants} grants, ${counts.denials} denials, ` +
    `${counts.writesAccepted} fenced writes accepted (${writes.length} in the log, all in token order: ${outOfOrderWrites.length === 0}), ` +
    `${counts.staleRefused} stale writes refused, ${counts.staleAccepted} late writes accepted because no newer token had written, ` +
    `${overlaps.length} overlapping holds, ${duplicateTokens.length} token violations`;
  return {
    attempts: counts.attempts,
    grants: counts.grants,
    denials: counts.denials,
    writesAccepted: counts.writesAccepted,
    writesRefusedWhileHolding: counts.writesRefusedWhileHolding,
    staleWritesRefused: counts.staleRefused,
    staleWritesAcceptedAsNewest: counts.staleAccepted,
    overlaps,
    duplicateTokens,
    outOfOrderWrites,
    summary,
  };
}
