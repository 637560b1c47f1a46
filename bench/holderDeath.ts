// How long a key stays held after its holder dies, per backend and way of dying, against each goal:
//   npx tsx bench/holderDeath.ts [--backends sqlite,redis,postgres,etcd] [--rounds 3]
// A 10 s TTL (renewals every 3.3 s) and the default holder TTL (15 s). Each round: a holder, one waiter
// parked behind it, then the holder's death, and the time from the death to the waiter's grant (the
// lock service's grantedAt, on its clock, on this host). The deaths:
//   client      a process holding through acquire() (its keep-alives) is SIGKILLed
//               goal: the holder TTL and one renewal interval (18.3 s)
//   terminated  `terminate` of the holding session (an operator, a run timeout)
//               goal: the TTL and one sweep (15 s)
//   worker      the worker process running the holding session is SIGKILLed, for good (the session's
//               task queue has no other worker; the waiter's has one)
//               goal: the TTL and one sweep (15 s)
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Command } from 'commander';
import { createSessionWaker } from '../activities/sessionSignals';
import { awaitLeaseOf, release, startAcquisition } from '../client/lockwardenClient';
import { SERVER_URLS } from '../devkit/servers';
import {
  connectTestEnv,
  installQuietRuntime,
  quietBundlerLogger,
  silentLog,
  TEMPORAL_ADDRESS,
} from '../devkit/temporal';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { openLockService } from '../locks/openLockService';
import type { LockService } from '../locks/lockService';
import { DEFAULT_QUEUE_SWEEP_MS } from '../policy/constants';
import { DEFAULT_HOLDER_TTL_MS } from '../policy/decisions/holdLimits';
import { renewalIntervalMs } from '../policy/decisions/leaseKeeping';
import { createLockwardenWorker, WORKFLOWS_PATH } from '../worker/createWorker';
import { wholeNumber } from './cliArgs';
import { median } from './stats';

const BACKENDS = ['sqlite', 'redis', 'postgres', 'etcd'] as const;
type Backend = (typeof BACKENDS)[number];
const DEATHS = ['client', 'terminated', 'worker'] as const;
type Death = (typeof DEATHS)[number];

const TTL_MS = 10_000;
const ROOT = path.join(__dirname, '..');
const GOAL_MS: Record<Death, number> = {
  client: DEFAULT_HOLDER_TTL_MS + renewalIntervalMs(TTL_MS),
  terminated: TTL_MS + DEFAULT_QUEUE_SWEEP_MS,
  worker: TTL_MS + DEFAULT_QUEUE_SWEEP_MS,
};

const options = new Command('holderDeath')
  .option('--backends <list>', 'lock services, comma-separated', (v) => v.split(',') as Backend[], [
    ...BACKENDS,
  ])
  .option('--rounds <n>', 'rounds per backend and death', wholeNumber(1), 3)
  .parse()
  .opts<{ backends: Backend[]; rounds: number }>();

/** A process of its own running `script` with node and tsx, its output dropped. */
function nodeProcess(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, TEMPORAL_ADDRESS, LOG_LEVEL: 'silent', ANTHROPIC_API_KEY: '', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
}

async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGKILL');
  await exited;
}

/** Starts the holder that is to die, and answers how to kill it (and what to clean up after). */
async function holderFor(
  death: Death,
  client: Client,
  key: string,
  lockUrl: string,
  waiterQueue: string,
): Promise<{ die: () => Promise<void>; cleanUp: () => Promise<void> }> {
  if (death === 'client') {
    const child = nodeProcess([
      'devkit/holdFromProcess.ts',
      key,
      'holder',
      waiterQueue,
      String(DEFAULT_HOLDER_TTL_MS),
    ]);
    await new Promise((done) => child.stdout!.once('data', done));
    return { die: () => killed(child), cleanUp: () => killed(child) };
  }
  if (death === 'terminated') {
    const handle = await detachedHolder(client, key, waiterQueue);
    const die = async () => void (await handle.terminate('holder death bench'));
    return { die, cleanUp: async () => undefined };
  }
  // A worker of its own, on a queue of its own: the holder's session runs only there.
  const holderQueue = unique('dying-worker');
  const worker = nodeProcess(['worker/main.ts'], {
    LOCKWARDEN_TASK_QUEUE: holderQueue,
    LOCK_SERVICE_URL: lockUrl,
  });
  const handle = await detachedHolder(client, key, holderQueue);
  return {
    die: () => killed(worker),
    cleanUp: async () => {
      await killed(worker);
      await handle.terminate('holder death bench').catch(() => undefined);
    },
  };
}

/** A detached session holding `key` on `taskQueue`, once it holds. */
async function detachedHolder(client: Client, key: string, taskQueue: string) {
  const session = await startAcquisition(client, { key, requester: 'holder', ttlMs: TTL_MS }, { taskQueue });
  await awaitLeaseOf(client, session.workflowId);
  return client.workflow.getHandle(session.workflowId);
}

/** One round: the time from the holder's death to the waiter's grant, in ms. */
async function round(death: Death, client: Client, locks: LockService, lockUrl: string, queue: string) {
  const key = unique(`death-${death}`);
  const holder = await holderFor(death, client, key, lockUrl, queue);
  try {
    // The hold settles: the keeper (half a renewal interval in) and the keep-alive watch are running;
    // then the death comes at a random moment of the renewal and keep-alive cycles, not in step with them.
    await delay(5_000 + (Math.random() * DEFAULT_HOLDER_TTL_MS) / 3);
    const waiter = await startAcquisition(
      client,
      { key, requester: 'next', ttlMs: TTL_MS },
      { taskQueue: queue },
    );
    while ((await locks.position({ key, requester: 'next' })) === null) await delay(50);
    const diedAt = Date.now();
    await holder.die();
    const answer = await awaitLeaseOf(client, waiter.workflowId);
    if (answer.status !== 'acquired') throw new Error(`the waiter on ${key} ended without the lease`);
    await release(client, answer.lease);
    return answer.lease.grantedAt - diedAt;
  } finally {
    await holder.cleanUp();
  }
}

async function main(): Promise<void> {
  execFileSync('bash', [path.join(ROOT, 'scripts', 'temporal-server.sh'), 'start'], { stdio: 'ignore' });
  execFileSync('bash', [path.join(ROOT, 'scripts', 'lock-servers.sh'), 'start'], { stdio: 'ignore' });
  installQuietRuntime();
  const env = await connectTestEnv();
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: quietBundlerLogger,
  });
  const rows: { backend: Backend; death: Death; ms: number[] }[] = [];
  try {
    for (const backend of options.backends) {
      const lockUrl = backend === 'sqlite' ? `sqlite:${freshSqlitePath()}` : SERVER_URLS[backend];
      const locks = await openLockService(lockUrl, { maxTtlMs: 600_000 });
      const queue = unique('death-waiters');
      const worker = await createLockwardenWorker({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue: queue,
        deps: { locks, log: silentLog, waker: createSessionWaker(env.client, silentLog) },
        workflows: { workflowBundle },
      });
      try {
        await worker.runUntil(async () => {
          for (const death of DEATHS) {
            const ms: number[] = [];
            for (let r = 0; r < options.rounds; r++)
              ms.push(await round(death, env.client, locks, lockUrl, queue));
            console.log(`${backend} ${death}: ${ms.map((m) => (m / 1000).toFixed(1)).join(', ')} s`);
            rows.push({ backend, death, ms });
          }
        });
      } finally {
        await locks.close();
      }
    }
  } finally {
    await env.teardown();
  }
  const table = [
    `Holder death to the next waiter's grant (TTL ${TTL_MS / 1000} s, holder TTL ${DEFAULT_HOLDER_TTL_MS / 1000} s, sweep ${DEFAULT_QUEUE_SWEEP_MS / 1000} s; ${options.rounds} rounds each; ${new Date().toISOString()})`,
    '',
    '| backend | death | median | max | goal | within goal |',
    '|---|---|---|---|---|---|',
    ...rows.map(({ backend, death, ms }) => {
      const max = Math.max(...ms);
      return `| ${backend} | ${death} | ${(median(ms) / 1000).toFixed(1)} s | ${(max / 1000).toFixed(1)} s | ${(GOAL_MS[death] / 1000).toFixed(1)} s | ${max <= GOAL_MS[death] ? 'yes' : 'NO'} |`;
    }),
  ].join('\n');
  console.log(`\n${table}`);
  const out = path.join(__dirname, 'results', 'holder-death');
  fs.writeFileSync(`${out}.md`, `${table}\n`);
  fs.writeFileSync(`${out}.json`, JSON.stringify({ ttlMs: TTL_MS, goalsMs: GOAL_MS, rows }, null, 2) + '\n');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
