// One worker process of the fault campaign: lockwarden through its plugin, beside the campaign's own
// workflow and its fenced-write activity, on a lock service whose answers it journals. The runner
// starts three, and its nemesis pauses, kills and replaces them.
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { Context } from '@temporalio/activity';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { answeredWithin } from '../activities/leaseKeeper';
import { LOCK_CALL_TIMEOUT_MS } from '../policy/decisions/leaseKeeping';
import { PROOF_MARGIN_MS } from './checker';
import pino from 'pino';
import { FileEscalationStore } from '../activities/escalationStore';
import { openLockService } from '../locks/openLockService';
import { LockwardenPlugin } from '../worker/lockwardenPlugin';
import type { CampaignActivities } from './campaignWorkflows';
import { journalingLocks } from './journal';
import { openResources } from './resources';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`campaign worker: ${name} is not set`);
  return value;
};

// Temporal may be down when a worker starts (the nemesis restarts it): try until it answers.
async function connectWhenUp<T>(connect: () => Promise<T>): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await connect();
    } catch (error) {
      if (tries >= 120) throw error;
      await delay(500);
    }
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const address = env('TEMPORAL_ADDRESS');
  const log = pino({ level: 'silent' });
  const locks = journalingLocks(
    await openLockService(env('LOCK_SERVICE_URL'), { maxTtlMs: 60_000 }),
    env('CAMPAIGN_JOURNAL'),
  );
  const resources = await openResources({
    sqlitePath: env('CAMPAIGN_SQLITE_RESOURCE'),
    postgresUrl: env('CAMPAIGN_POSTGRES_RESOURCE'),
  });
  const connection = await connectWhenUp(() => NativeConnection.connect({ address }));
  const client = new Client({ connection: await connectWhenUp(() => connectTemporal({ address })) });
  const activities: CampaignActivities = {
    // The work done under the lock, record by record: a pause anywhere here makes the next write stale.
    // Before each write the holder proves its lease at the service (holder, token, and more than
    // PROOF_MARGIN_MS left on the service's clock), within a bounded call: a holder cut off from the
    // service, or too near its deadline, stops rather than write on an unproven lease. A writer that
    // does not prove trusts the resource's fencing alone: a late write of its is refused there.
    async fencedWrite({ key, holder, token, records, workMs, proves }) {
      const context = Context.current();
      for (let seq = 0; seq < records; seq++) {
        await delay(workMs);
        context.heartbeat(seq);
        if (context.cancellationSignal.aborted)
          return { accepted: false, token, unproven: 'withLock cancelled the job: the lease was lost' };
        const unproven = proves ? await leaseUnproven(key, holder, token) : null;
        if (unproven) return { accepted: false, token, unproven };
        const result = await resources.write({ key, token, holder, seq });
        if (!result.accepted)
          return { accepted: false, token, written: seq, newestToken: result.newestToken };
      }
      return { accepted: true, token, written: records };
    },
  };
  // Why the lease cannot be proven now, or null when the service shows it with time to spare.
  async function leaseUnproven(key: string, holder: string, token: string): Promise<string | null> {
    try {
      const seen = await answeredWithin(LOCK_CALL_TIMEOUT_MS, locks.inspect(key));
      if (seen.holder !== holder || seen.token !== token) return 'the service shows another lease';
      if (seen.leaseUntil! - seen.serviceTime <= PROOF_MARGIN_MS) return 'too near its deadline';
      return null;
    } catch (error) {
      return `the service could not be asked: ${String(error)}`;
    }
  }
  const worker = await Worker.create({
    connection,
    taskQueue: env('CAMPAIGN_TASK_QUEUE'),
    workflowBundle: { codePath: env('CAMPAIGN_BUNDLE') },
    activities,
    plugins: [
      new LockwardenPlugin({
        locks,
        client,
        log,
        escalations: new FileEscalationStore(env('CAMPAIGN_ESCALATIONS')),
      }),
    ],
  });
  process.once('SIGTERM', () => worker.shutdown());
  try {
    await worker.run();
  } finally {
    await resources.close();
    await locks.close();
    await connection.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
