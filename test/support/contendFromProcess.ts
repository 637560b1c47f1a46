import { setTimeout as delay } from 'node:timers/promises';
import { SqliteLockService } from '../../locks/sqliteLockService';

// Run as a separate process by the SQLite suite: from `startAt` (epoch ms, so processes started
// apart contend at once), contends for one key in a shared database file and prints each hold it got
// as a JSON line { token, grantedAt, releasedAt } on the service clock, and each denial as
// { deniedBy } naming the holder.
async function main(): Promise<void> {
  const [file, key, requester, rounds, startAt] = process.argv.slice(2);
  const locks = new SqliteLockService({ path: file! });
  await delay(Math.max(0, Number(startAt) - Date.now()));
  for (let i = 0; i < Number(rounds); i++) {
    const attempt = await locks.tryAcquire({
      key: key!,
      requester: `${requester}-${i}`,
      ttlMs: 5_000,
      fairness: 'no-starvation-guarantee',
    });
    if (attempt.granted) {
      await delay(2);
      const released = await locks.release(attempt.lease);
      if (!released.ok) throw new Error(`release refused: ${released.reason}`);
      console.log(
        JSON.stringify({
          token: attempt.lease.token,
          grantedAt: attempt.lease.grantedAt,
          releasedAt: released.serviceTime,
        }),
      );
    } else {
      console.log(JSON.stringify({ deniedBy: attempt.denial.holder }));
      await delay(1);
    }
  }
  await locks.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
