import { Command, InvalidArgumentError } from 'commander';
import { DEFAULT_TASK_QUEUE } from '../policy/constants';
import { isInvalidLockRequest } from '../policy/errors';
import { connectClient } from './connect';
import { releaseLease, startAcquisition } from './lockwardenClient';

// `lockctl`: start acquisition sessions and release leases from a shell, on any task queue.

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected a whole number, got "${value}"`);
  return Number(value);
}

const program = new Command('lockctl')
  .description('Acquire and release lockwarden locks through Temporal')
  .option(
    '--address <host:port>',
    'Temporal frontend address',
    process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
  )
  .option('--namespace <name>', 'Temporal namespace', process.env.TEMPORAL_NAMESPACE ?? 'default')
  .option(
    '--task-queue <name>',
    'task queue the lockwarden worker polls',
    process.env.LOCKWARDEN_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
  )
  .option('--ui <url>', 'Temporal Web UI base URL', process.env.TEMPORAL_UI_URL ?? 'http://localhost:8233');

program
  .command('acquire')
  .description('start an acquisition session and wait for its outcome')
  .argument('<key>', 'lock key')
  .requiredOption('--requester <id>', 'requester id, unique per session')
  .option('--ttl-ms <ms>', 'lease TTL', wholeNumber)
  .option('--max-retries <n>', 'hard limit on retries', wholeNumber)
  .option('--max-total-wait-ms <ms>', 'hard limit on total wait', wholeNumber)
  .option('--no-wait', 'print the session and return without waiting for the outcome')
  .action(
    async (
      key: string,
      opts: {
        requester: string;
        ttlMs?: number;
        maxRetries?: number;
        maxTotalWaitMs?: number;
        wait: boolean;
      },
    ) => {
      const global = program.opts<{ address: string; namespace: string; taskQueue: string; ui: string }>();
      const client = await connectClient(global);
      try {
        const budget = Object.fromEntries(
          Object.entries({ maxRetries: opts.maxRetries, maxTotalWaitMs: opts.maxTotalWaitMs }).filter(
            ([, v]) => v !== undefined,
          ),
        );
        const session = await startAcquisition(
          client,
          { key, requester: opts.requester, ...(opts.ttlMs ? { ttlMs: opts.ttlMs } : {}), budget },
          { taskQueue: global.taskQueue, uiBaseUrl: global.ui },
        );
        console.log(
          JSON.stringify({ workflowId: session.workflowId, runId: session.runId, ui: session.uiUrl }),
        );
        if (opts.wait) console.log(JSON.stringify(await session.result()));
      } finally {
        await client.connection.close();
      }
    },
  );

program
  .command('release')
  .description('release a lease, fenced by its token')
  .argument('<key>', 'lock key')
  .requiredOption('--holder <id>', 'the holder the lease was granted to')
  .requiredOption('--token <digits>', 'the fencing token the lock service issued')
  .action(async (key: string, opts: { holder: string; token: string }) => {
    const global = program.opts<{ address: string; namespace: string; taskQueue: string }>();
    const client = await connectClient(global);
    try {
      console.log(
        JSON.stringify(await releaseLease(client, { key, ...opts }, { taskQueue: global.taskQueue })),
      );
    } finally {
      await client.connection.close();
    }
  });

program.parseAsync().catch((error: unknown) => {
  console.error(
    isInvalidLockRequest(error) ? error.message : error instanceof Error ? error.message : String(error),
  );
  process.exit(isInvalidLockRequest(error) ? 2 : 1);
});
