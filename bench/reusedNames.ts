// Requester names reused on every key, as a user who names requesters by replica would: K keys, N
// waiters each named w0..w(N-1), all started at once; each holds for HOLD ms when its turn comes and
// releases. No session holds while it waits, so none may halt for a deadlock. Prints the outcomes.
//   npx tsx bench/reusedNames.ts [keys=100] [waiters=10] [holdMs=20]
import { acquire, release } from '../client/lockwardenClient';
import type { SessionOutcome } from '../policy/sessionModel/sessionTypes';
import { onProjectServer, silentLog, withWorker } from '../devkit/temporal';
import { unique } from '../devkit/tempFiles';

const numberArg = (index: number, fallback: number) => Number(process.argv[2 + index] ?? fallback);
const [KEYS, WAITERS, HOLD_MS] = [numberArg(0, 100), numberArg(1, 10), numberArg(2, 20)];

async function main(): Promise<void> {
  const { env, locks, close } = await onProjectServer();
  const started = Date.now();
  const keys = Array.from({ length: KEYS }, (_, k) => unique(`reused-k${k}`));
  const names = Array.from({ length: WAITERS }, (_, w) => `w${w}`);
  // Generous budgets: the last of ten waiters on a key waits for nine holds and hand-offs.
  const budget = { maxTotalWaitMs: 600_000, maxRetries: 1_000 };
  let outcomes: SessionOutcome[] = [];
  try {
    outcomes = await withWorker(env, { locks, log: silentLog }, (taskQueue) =>
      Promise.all(
        keys.flatMap((key) =>
          names.map(async (requester): Promise<SessionOutcome> => {
            try {
              const { lease, session } = await acquire(env.client, { key, requester, budget }, { taskQueue });
              await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
              await release(env.client, lease);
              return await session.result();
            } catch (error) {
              // LockNotAcquired carries the session's outcome: a halt shows up here.
              const outcome = (error as { outcome?: SessionOutcome }).outcome;
              if (outcome) return outcome;
              throw error;
            }
          }),
        ),
      ),
    );
  } finally {
    await close();
  }
  const byStatus = new Map<string, number>();
  for (const o of outcomes) byStatus.set(o.status, (byStatus.get(o.status) ?? 0) + 1);
  const counts = [...byStatus].map(([status, n]) => `${status} ${n}`).join(', ');
  console.log(
    `${KEYS} keys x ${WAITERS} waiters, names reused on every key, ${HOLD_MS} ms holds: ${outcomes.length} sessions: ${counts}; ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  if (byStatus.get('released') !== outcomes.length) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
