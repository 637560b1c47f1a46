// A soak: does anything grow with the keys ever used, rather than the keys in use? Per backend:
//   npx tsx bench/soak.ts [--backends sqlite,redis,postgres,etcd] [--minutes 60] [--sample-seconds 30]
//     [--distinct-keys 100000] [--contended-keys 100]
// For `--minutes` on each backend in turn, on the dev server and one lockwarden worker:
//   - constant contention: two sessions per contended key, each holding 5 s, then the next;
//   - `--distinct-keys` keys each used once (taken and released), spread over the run, through the
//     lock service directly: their cost is the lock service's storage and sweeps, not Temporal's;
//   - an escalation every 10 s (a session with no retry budget on a held key) and its operator's
//     answer (abandon), which pages on-call into the escalation store (rotated at 16 KiB unless
//     --store-max-bytes says otherwise).
// Every `--sample-seconds` it samples the lock service's storage (SQLite file and WAL, Redis memory
// and keys, PostgreSQL table and index sizes, etcd's database in use), one sweep's lock-service work
// timed (leasesRunningLow, stalledQueues, forgetIdleKeys), this process's RSS (worker and load
// generator) and the escalation store's bytes. Writes bench/results/soak-<backend>.json per backend,
// then soak.md and soak.svg from every backend's latest run (`--report` writes only those two).
// `bench/soak.ts --sweep-cost` measures instead what one sweep reads after 10^3, 10^4 and 10^5 keys
// used once, before and after they are forgotten (bench/sweepCost.ts).
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Command } from 'commander';
import { FileEscalationStore } from '../activities/escalationStore';
import { createSessionWaker } from '../activities/sessionSignals';
import { release, resolve, startAcquisition, startAwaitingLease, stateOf } from '../client/lockwardenClient';
import { connectTestEnv, installQuietRuntime, quietBundlerLogger, silentLog } from '../devkit/temporal';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import { SILENT_LEASE_FRACTION } from '../policy/decisions/leaseKeeping';
import { createLockwardenWorker, WORKFLOWS_PATH } from '../worker/createWorker';
import { wholeNumber } from './cliArgs';
import { type Backend, BACKENDS, lockUrlOf, startServers, storageOf } from './soakStorage';
import { sweepCost } from './sweepCost';
import { median } from './stats';
import { lineChart } from './svgChart';

const options = new Command('soak')
  .option('--backends <list>', 'lock services, comma-separated', (v) => v.split(',') as Backend[], [
    ...BACKENDS,
  ])
  .option('--minutes <n>', 'minutes on each backend', wholeNumber(1), 60)
  .option('--sample-seconds <n>', 'seconds between samples', wholeNumber(1), 30)
  .option('--distinct-keys <n>', 'keys used once each, over the run', wholeNumber(0), 100_000)
  .option('--contended-keys <n>', 'keys two sessions contend for all along', wholeNumber(1), 100)
  // Small by default, so that the store rotates (to <file>.1) within a run and its bound shows.
  .option('--store-max-bytes <n>', "the escalation store's rotation size", wholeNumber(1024), 16 * 1024)
  .option('--sweep-cost', 'measure one sweep after 10^3, 10^4 and 10^5 keys used once instead')
  .option('--report', "write soak.md and soak.svg from each backend's latest run, and run nothing")
  .parse()
  .opts<{
    backends: Backend[];
    minutes: number;
    sampleSeconds: number;
    distinctKeys: number;
    contendedKeys: number;
    storeMaxBytes: number;
    sweepCost?: boolean;
    report?: boolean;
  }>();

const HOLD_MS = 5_000;
const ESCALATE_EVERY_MS = 10_000;
const RESULTS = path.join(__dirname, 'results');

interface Sample {
  minute: number;
  storageBytes: number;
  storageDetail: string;
  sweepMs: number;
  rssMiB: number;
  escalationStoreBytes: number;
  keysUsedOnce: number;
  handoffs: number;
  escalations: number;
}

/** One sweep's lock-service work, as the worker's sweep does it, timed. */
async function timedSweep(locks: LockService): Promise<number> {
  const start = performance.now();
  await locks.leasesRunningLow(SILENT_LEASE_FRACTION);
  await locks.stalledQueues();
  await locks.forgetIdleKeys();
  return performance.now() - start;
}

/** Takes and releases the key, through sessions, until `until`; counts the hand-offs (a failure waits 1 s). */
async function contend(client: Client, taskQueue: string, key: string, until: number, count: { n: number }) {
  while (Date.now() < until) await oneHold(client, taskQueue, key, count).catch(() => delay(1_000));
}

/** One session: waits for the key, holds it HOLD_MS, releases it. */
async function oneHold(client: Client, taskQueue: string, key: string, count: { n: number }) {
  const { session, news } = await startAwaitingLease(
    client,
    {
      key,
      requester: unique('contender'),
      ttlMs: 10_000,
      budget: { maxTotalWaitMs: 600_000, maxRetries: 10_000 },
    },
    { taskQueue },
  );
  const answer = await news;
  if (answer.status !== 'acquired') return;
  await delay(HOLD_MS);
  await release(client, answer.lease, { releaseKey: session.releaseKey });
  count.n++;
}

/**
 * Every ESCALATE_EVERY_MS, a session that escalates at once on `key` (held all along by the soak
 * itself, so the session is denied), answered by an operator.
 */
async function escalate(client: Client, taskQueue: string, key: string, until: number, count: { n: number }) {
  while (Date.now() + ESCALATE_EVERY_MS < until) {
    await delay(ESCALATE_EVERY_MS);
    const session = await startAcquisition(
      client,
      { key, requester: unique('escalating'), budget: { maxRetries: 0, maxTotalWaitMs: 1_000 } },
      { taskQueue },
    );
    const escalated = async () =>
      (await stateOf(client, session.workflowId).catch(() => null))?.phase === 'escalated';
    for (let i = 0; i < 150 && !(await escalated()); i++) await delay(200);
    await resolve(client, session.workflowId, { action: 'abandon', operator: 'soak', reason: 'soak run' });
    count.n++;
  }
}

/** Keys used once each, at an even pace over the run. */
async function useOnce(locks: LockService, total: number, until: number, count: { n: number }) {
  const start = Date.now();
  const perMs = total / (until - start);
  while (count.n < total && Date.now() < until) {
    const due = Math.min(total, Math.floor((Date.now() - start) * perMs));
    const batch = Array.from({ length: due - count.n }, (_, i) => `soak-once-${count.n + i}`);
    count.n += batch.length;
    for (let i = 0; i < batch.length; i += 16)
      await Promise.all(
        batch.slice(i, i + 16).map(async (key) => {
          const attempt = await locks.tryAcquire({ key, requester: 'once', ttlMs: 30_000 });
          if (attempt.granted) await locks.release(attempt.lease);
        }),
      );
    await delay(50);
  }
}

async function soakOne(backend: Backend, client: Client, env: Awaited<ReturnType<typeof connectTestEnv>>) {
  const lockUrl = backend === 'sqlite' ? `sqlite:${freshSqlitePath()}` : lockUrlOf(backend);
  const locks = await openLockService(lockUrl);
  const storeFile = path.join(path.dirname(freshSqlitePath()), `${unique('soak-escalations')}.jsonl`);
  const escalations = new FileEscalationStore(storeFile, { maxBytes: options.storeMaxBytes });
  const taskQueue = unique(`soak-${backend}`);
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: quietBundlerLogger,
  });
  const worker = await createLockwardenWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    deps: { locks, log: silentLog, waker: createSessionWaker(client, silentLog), escalations },
    workflows: { workflowBundle },
  });
  const samples: Sample[] = [];
  const [handoffs, escalated, usedOnce] = [{ n: 0 }, { n: 0 }, { n: 0 }];
  const started = Date.now();
  const until = started + options.minutes * 60_000;
  const storeBytes = () =>
    [storeFile, `${storeFile}.1`].reduce((sum, f) => sum + (fs.existsSync(f) ? fs.statSync(f).size : 0), 0);
  await worker.runUntil(async () => {
    const keys = Array.from({ length: options.contendedKeys }, (_, i) => `soak-${backend}-hot-${i}`);
    // Held by the soak for the whole run, straight at the lock service: every escalating session is
    // denied there, escalates, and is answered.
    const escalationKey = unique(`soak-${backend}-escalations`);
    const blocker = await locks.tryAcquire({
      key: escalationKey,
      requester: 'soak-blocker',
      ttlMs: (options.minutes + 5) * 60_000,
    });
    // A load loop that fails is reported and counted, and the soak goes on with the others.
    const failed: string[] = [];
    const load = [
      ...keys.flatMap((key) => [1, 2].map(() => contend(client, taskQueue, key, until, handoffs))),
      escalate(client, taskQueue, escalationKey, until, escalated),
      useOnce(locks, options.distinctKeys, until, usedOnce),
    ].map((loop) =>
      loop.catch((error: unknown) => {
        failed.push(String(error));
        console.error(`${backend}: a load loop failed: ${String(error)}`);
      }),
    );
    while (Date.now() < until) {
      await delay(options.sampleSeconds * 1000);
      const storage = await storageOf(backend, lockUrl);
      const sample: Sample = {
        minute: Math.round((Date.now() - started) / 6_000) / 10,
        storageBytes: storage.bytes,
        storageDetail: storage.detail,
        sweepMs: await timedSweep(locks),
        rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
        escalationStoreBytes: storeBytes(),
        keysUsedOnce: usedOnce.n,
        handoffs: handoffs.n,
        escalations: escalated.n,
      };
      samples.push(sample);
      console.log(`${backend} ${JSON.stringify(sample)}`);
    }
    // Sessions still waiting at the end are left to their budget: the next backend does not wait.
    await Promise.race([Promise.all(load), delay(60_000)]);
    if (failed.length) console.error(`${backend}: ${failed.length} load loops failed`);
    if (blocker.granted) await locks.release(blocker.lease);
  });
  await locks.close();
  return samples;
}

/** What one backend's soak wrote: its run's size and its samples. */
interface SoakRun {
  minutes: number;
  distinctKeys: number;
  /** The escalation store's rotation size (absent in runs from before the flag: 16 KiB). */
  storeMaxBytes?: number;
  samples: Sample[];
}

function table(backend: Backend, run: SoakRun): string {
  const { samples } = run;
  const last = samples[samples.length - 1]!;
  const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a');
  // Medians of the second quarter (warmed up) and of the last quarter: one sample is noisy.
  const q = Math.max(1, Math.floor(samples.length / 4));
  const [warmed, late] = [samples.slice(q, 2 * q), samples.slice(-q)];
  const med = (part: Sample[], of: (s: Sample) => number) => median(part.map(of));
  const compare = (of: (s: Sample) => number) => ratio(med(late, of), med(warmed, of));
  return [
    `### ${backend}: \`--minutes ${run.minutes} --distinct-keys ${run.distinctKeys} --store-max-bytes ${run.storeMaxBytes ?? 16_384}\`: ${last.keysUsedOnce} keys used once, ${last.handoffs} hand-offs, ${last.escalations} escalations`,
    '',
    '| minute | storage | sweep | RSS | escalation store | keys used once |',
    '|---|---|---|---|---|---|',
    ...samples
      .filter((_, i) => i % Math.max(1, Math.floor(samples.length / 12)) === 0 || samples[i] === last)
      .map(
        (s) =>
          `| ${s.minute} | ${(s.storageBytes / 1024).toFixed(0)} KiB (${s.storageDetail}) | ${s.sweepMs.toFixed(1)} ms | ${s.rssMiB} MiB | ${(s.escalationStoreBytes / 1024).toFixed(0)} KiB | ${s.keysUsedOnce} |`,
      ),
    '',
    `Last quarter against the second (medians, minutes ${warmed[0]!.minute}-${warmed[warmed.length - 1]!.minute} and ` +
      `${late[0]!.minute}-${last.minute}): storage ${compare((x) => x.storageBytes)}, sweep ` +
      `${compare((x) => x.sweepMs)} (${med(warmed, (x) => x.sweepMs).toFixed(1)} and ${med(late, (x) => x.sweepMs).toFixed(1)} ms), ` +
      `RSS ${compare((x) => x.rssMiB)}, escalation store ${compare((x) => x.escalationStoreBytes)}; ` +
      `keys used once ${compare((x) => x.keysUsedOnce)}.`,
  ].join('\n');
}

const runFile = (backend: Backend) => path.join(RESULTS, `soak-${backend}.json`);

/**
 * The report of every backend's latest run (results/soak-<backend>.json): soak.md, and soak.svg with
 * each backend's storage against its own quarter mark (a flat line at 1 is storage that follows the
 * keys in use, while the keys used once keep rising).
 */
function report(): void {
  const runs = BACKENDS.filter((b) => fs.existsSync(runFile(b))).map(
    (b) => [b, JSON.parse(fs.readFileSync(runFile(b), 'utf8')) as SoakRun] as const,
  );
  const md = [`Soak (report of ${new Date().toISOString()})`, ...runs.map(([b, run]) => table(b, run))].join(
    '\n\n',
  );
  console.log(`\n${md}`);
  fs.writeFileSync(path.join(RESULTS, 'soak.md'), `${md}\n`);
  const series = runs.map(([b, { samples }]) => {
    const warm = samples[Math.floor(samples.length / 4)] ?? samples[0]!;
    return { name: b, points: samples.map((x) => ({ x: x.minute, y: x.storageBytes / warm.storageBytes })) };
  });
  const title = 'Lock service storage during the soak';
  fs.writeFileSync(
    path.join(RESULTS, 'soak.svg'),
    lineChart(title, 'minute', 'storage ÷ at the quarter mark', series, 2, true),
  );
}

async function main(): Promise<void> {
  if (options.report) return report();
  startServers();
  if (options.sweepCost) return sweepCost(options.backends);
  installQuietRuntime();
  const env = await connectTestEnv();
  try {
    for (const backend of options.backends) {
      const samples = await soakOne(backend, env.client, env);
      const { minutes, distinctKeys, storeMaxBytes } = options;
      const run: SoakRun = { minutes, distinctKeys, storeMaxBytes, samples };
      fs.writeFileSync(runFile(backend), `${JSON.stringify(run, null, 2)}\n`);
    }
  } finally {
    await env.teardown();
  }
  report();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
