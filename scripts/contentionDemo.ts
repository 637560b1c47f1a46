// The README's main job: many requesters contend for two keys through a running worker, and the
// outcome is checked against the lock service's own timeline (tokens and service times).
import { setTimeout as delay } from 'node:timers/promises';
import { connectClient } from '../client/connect';
import { acquire, release } from '../client/lockwardenClient';
import { isLockNotAcquired } from '../policy/errors';
import { DEFAULT_TASK_QUEUE, DEFAULT_UI_URL } from '../policy/constants';

const KEYS = ['demo/billing-export', 'demo/leader-election'];
const REQUESTERS_PER_KEY = Number(process.env.DEMO_REQUESTERS_PER_KEY ?? 5);
const taskQueue = process.env.LOCKWARDEN_TASK_QUEUE ?? DEFAULT_TASK_QUEUE;
const uiBaseUrl = process.env.TEMPORAL_UI_URL ?? DEFAULT_UI_URL;

interface Hold {
  key: string;
  requester: string;
  token: bigint;
  grantedAt: number;
  releasedAt: number;
  attempts: number;
  waitedMs: number;
}

async function main(): Promise<number> {
  const client = await connectClient();
  const runTag = new Date()
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14);
  const holds: Hold[] = [];
  const failures: string[] = [];
  const contenders = KEYS.flatMap((key) =>
    Array.from({ length: REQUESTERS_PER_KEY }, (_, i) => ({
      key,
      requester: `demo-${runTag}-${key.split('/')[1]}-${i + 1}`,
    })),
  );
  console.log(
    `${contenders.length} requesters contend for ${KEYS.length} keys on task queue "${taskQueue}"\n`,
  );

  await Promise.all(
    contenders.map(async ({ key, requester }) => {
      let acquired;
      const askedAt = Date.now();
      try {
        acquired = await acquire(
          client,
          {
            key,
            requester,
            ttlMs: 10_000,
            budget: { maxRetries: 60, maxTotalWaitMs: 60_000, maxBackoffMs: 800, baseBackoffMs: 100 },
          },
          { taskQueue, uiBaseUrl },
        );
      } catch (error) {
        if (!isLockNotAcquired(error)) throw error;
        failures.push(`${requester} on ${key}: ${error.message}`);
        console.log(`NOT HELD  ${key.padEnd(22)} ${requester}  ${error.message}`);
        return;
      }
      const { lease, session } = acquired;
      const waitedMs = Date.now() - askedAt;
      console.log(
        `acquired  ${key.padEnd(22)} ${requester.padEnd(40)} token ${lease.token.padStart(4)}  ` +
          `waited ${String(waitedMs).padStart(5)} ms\n          ${session.uiUrl}`,
      );
      await delay(150 + Math.floor(Math.random() * 250)); // the protected work
      const released = await release(client, lease);
      if (!released.ok) {
        failures.push(`${requester} could not release ${key}: ${released.reason}`);
        return;
      }
      const outcome = await session.result();
      holds.push({
        key,
        requester,
        token: BigInt(lease.token),
        grantedAt: lease.grantedAt,
        releasedAt: released.serviceTime,
        attempts: outcome.attempts,
        waitedMs,
      });
    }),
  );
  await client.connection.close();

  console.log('\nsummary (checked on the lock service clock):');
  for (const key of KEYS) {
    const ofKey = holds.filter((h) => h.key === key).sort((a, b) => a.grantedAt - b.grantedAt);
    for (let i = 1; i < ofKey.length; i++) {
      const [before, after] = [ofKey[i - 1]!, ofKey[i]!];
      if (after.token <= before.token)
        failures.push(`${key}: token ${after.token} granted after ${before.token}`);
      if (after.grantedAt < before.releasedAt)
        failures.push(`${key}: ${after.requester} granted while ${before.requester} held it`);
    }
    const waits = ofKey.map((h) => h.waitedMs);
    console.log(
      `  ${key}: ${ofKey.length} holds, tokens ${ofKey.map((h) => h.token).join(' < ')}, ` +
        `max wait ${Math.max(...waits)} ms, ${ofKey.reduce((n, h) => n + h.attempts, 0)} attempts`,
    );
  }
  if (failures.length) {
    console.log(`\nFAILED:\n  ${failures.join('\n  ')}`);
    return 1;
  }
  console.log('  per key: tokens strictly increasing, no two holds overlapping');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
