// Run as a process of its own by tests that freeze or kill a user's worker: the user's workflows
// (test/support/userWorkflows) with lockwarden's through the plugin, on an SQLite lock file.
//   node --import tsx pluginWorkerProcess.ts <taskQueue> <lockFile>
// LOCKWARDEN_ISOLATE_TIMEOUT_MS, when set, is the plugin's activation time limit;
// LOCKWARDEN_TEST_SLOW_FIRST_POLICY_MS holds this process's first policy decision that long. Prints
// "ready" once it polls.
import path from 'node:path';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../../temporal/closeSafeRetries';
import { setTimeout as delay } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import {
  type ActivityInboundCallsInterceptor,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
} from '@temporalio/worker';
import pino from 'pino';
import { openLockService } from '../../locks/openLockService';
import { LockwardenPlugin } from '../../worker/lockwardenPlugin';
import { DEFAULT_TEMPORAL_ADDRESS } from '../../policy/constants';

// Holds the first decideByPolicy of this process for `ms`: a decision still running when the
// session's workflow task is due, so that the SDK completes the task without it.
function slowFirstPolicy(ms: number): ActivityInboundCallsInterceptor {
  let first = true;
  return {
    async execute(input, next) {
      if (first && Context.current().info.activityType === 'decideByPolicy') {
        first = false;
        await delay(ms);
      }
      return next(input);
    },
  };
}

async function main(): Promise<void> {
  const [taskQueue, lockFile] = process.argv.slice(2);
  const address = process.env.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const locks = await openLockService(`sqlite:${lockFile}`);
  const connection = await NativeConnection.connect({ address });
  const client = new Client({ connection: await connectTemporal({ address }) });
  const timeout = process.env.LOCKWARDEN_ISOLATE_TIMEOUT_MS;
  const slowPolicyMs = Number(process.env.LOCKWARDEN_TEST_SLOW_FIRST_POLICY_MS ?? 0);
  const worker = await Worker.create({
    connection,
    taskQueue: taskQueue!,
    workflowsPath: path.join(__dirname, 'userWorkflows'),
    activities: { exportBatch: async () => 'receipt' },
    ...(slowPolicyMs
      ? { interceptors: { activity: [() => ({ inbound: slowFirstPolicy(slowPolicyMs) })] } }
      : {}),
    plugins: [
      new LockwardenPlugin({
        locks,
        client,
        log: pino({ level: 'silent' }),
        ...(timeout ? { isolateExecutionTimeoutMs: Number(timeout) } : {}),
      }),
    ],
  });
  process.once('SIGTERM', () => worker.shutdown());
  console.log('ready');
  try {
    await worker.run();
  } finally {
    await locks.close();
    await connection.close();
    await client.connection.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
