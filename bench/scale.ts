// What parked waiters cost while nothing happens, and how fast they drain once the holders let go.
// One worker process, compiled JavaScript as users run it (its CPU, memory and lock-service calls
// read apart), the project's dev server, holders renewing at the default TTL, waiters parked behind
// them (FIFO, wake-on-release, a one-hour budget, every requester name distinct):
//   npx tsx bench/scale.ts [--waiters 0,100,1000] [--keys 100] [--idle-s 60] [--backend sqlite]
//                          [--rows 100:0,100:1000,1000:10000 (keys:waiters; instead of the lists)]
//                          [--max-cached N (the worker's default unless given)] [--out scale-sqlite]
//                          [--project-server (the project's dev server, not a fresh one of its own)]
//                          [--holders detached,kept-alive (each row once per kind of holder)]
//                          [--cluster (scripts/cluster.sh's Temporal services and etcd; each process's CPU)]
// Per row: worker and server CPU over the idle window, lock-service calls a second (and how many of
// them the holders' renewals are), history events per waiter a minute, the worker's RSS; then the
// drain (every holder releases, every waiter in turn takes and releases its lease, FIFO checked per
// key) against independent-key acquisitions a second on the same worker in the same run. A row of 0
// waiters measures the holders alone: the worker CPU one renewal costs. Holders are detached sessions,
// or (kept-alive) holders outside a workflow whose keep-alives this process sends, as acquire() does:
// the row then shows what holder liveness costs, in history events and CPU per holder. Charts of worker CPU, server
// CPU and RSS against the number of waiters go beside the table in bench/results/.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Command, InvalidArgumentError, Option } from 'commander';
import { mapConcurrently } from '../client/concurrency';
import { type HolderKeepAlive, keepHolderAlive } from '../client/holderKeepAlive';
import { awaitLeaseOf, release, startAcquisition } from '../client/lockwardenClient';
import { DEFAULT_HOLDER_TTL_MS } from '../policy/decisions/holdLimits';
import { SERVER_URLS } from '../devkit/servers';
import { CLUSTER, clusterUp } from '../devkit/cluster';
import { quietBundlerLogger } from '../devkit/temporal';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { openLockService } from '../locks/openLockService';
import { compareTokens } from '../policy/lockContract/tokens';
import { acquisitionWorkflowId } from '../policy/constants';
import { WORKFLOWS_PATH } from '../worker/createWorker';
import type { CallCounts } from './scale/countingLocks';
import { wholeNumber, wholeNumbers } from './cliArgs';
import { EvidenceFile } from './evidenceFile';
import { lineChart } from './svgChart';

const BACKENDS = ['sqlite', 'redis', 'postgres', 'etcd'] as const;
/** Detached sessions, or holders kept alive by their process (acquire()'s keep-alives). */
type HolderKind = 'detached' | 'kept-alive';
type Backend = (typeof BACKENDS)[number];

const counts = wholeNumbers(1);

const options = new Command('scale')
  .option(
    '--waiters <list>',
    'waiter counts, comma-separated (0: holders only)',
    wholeNumbers(0),
    [0, 100, 1_000],
  )
  .option('--keys <list>', 'key counts, comma-separated', counts, [100])
  .option('--idle-s <seconds>', 'the idle window', wholeNumber(1), 60)
  .addOption(new Option('--backend <name>', 'lock service').choices(BACKENDS).default('sqlite'))
  .option('--no-drain', 'measure the idle window only')
  .option('--rows <list>', 'keys:waiters pairs, comma-separated (instead of --keys × --waiters)', (v) =>
    v.split(',').map((pair) => {
      const [keys, waiters] = pair.split(':').map(Number);
      if (!Number.isInteger(keys) || keys! < 1 || !Number.isInteger(waiters) || waiters! < 0)
        throw new InvalidArgumentError(`not keys:waiters: ${pair}`);
      return { keys: keys!, waiters: waiters! };
    }),
  )
  .option(
    '--holders <kinds>',
    'detached and/or kept-alive, comma-separated: each row is measured once per kind',
    (v) =>
      v.split(',').map((kind) => {
        if (kind !== 'detached' && kind !== 'kept-alive')
          throw new InvalidArgumentError(`not a kind of holder: ${kind}`);
        return kind as HolderKind;
      }),
    ['detached'] as HolderKind[],
  )
  .option(
    '--cluster',
    "on scripts/cluster.sh's cluster: CPU of each server process, PostgreSQL's writes",
    false,
  )
  .option('--out <name>', "the results files' base name under bench/results/ (default scale-<backend>)")
  .option('--max-cached <n>', "the worker's workflow cache (its default unless given)", wholeNumber(1))
  .option(
    '--project-server',
    "measure on the project's dev server (127.0.0.1:7233, whatever its database holds) instead of a fresh one",
  )
  .parse()
  .opts<{
    waiters: number[];
    keys: number[];
    idleS: number;
    backend: Backend;
    drain: boolean;
    maxCached?: number;
    out?: string;
    projectServer?: boolean;
    rows?: { keys: number; waiters: number }[];
    holders: HolderKind[];
    cluster: boolean;
  }>();
if (options.cluster) options.backend = 'etcd';

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
const WAIT_BUDGET = { maxTotalWaitMs: 3_600_000, maxRetries: 10_000 };

/** CPU seconds a process has used (user + system), from /proc. */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function rssMiB(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return line ? Number(line[1]) / 1024 : NaN;
}

/**
 * The dev server a run measures on: by default one of its own, started by scripts/temporal-server.sh
 * with the project's settings on an empty database in a temporary directory, so a figure does not
 * depend on what earlier runs left in a database (a dev server's SQLite file of many gigabytes makes
 * every write dearer). `--project-server` uses the project's own on 127.0.0.1:7233 instead.
 */
const FRESH_SERVER = { port: 17433, uiPort: 18433 };
const serverPort = (): number => (options.projectServer ? 7233 : FRESH_SERVER.port);
const serverAddress = (): string => (options.cluster ? CLUSTER.temporalAddress : `127.0.0.1:${serverPort()}`);

function serverScript(command: 'start' | 'stop', dataDir: string | null): void {
  const env = dataDir
    ? {
        ...process.env,
        LOCKWARDEN_DATA_DIR: dataDir,
        TEMPORAL_PORT: String(FRESH_SERVER.port),
        TEMPORAL_UI_PORT: String(FRESH_SERVER.uiPort),
      }
    : process.env;
  execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'temporal-server.sh'), command], {
    stdio: 'ignore',
    env,
  });
}

function temporalServerPid(): number {
  const out = execFileSync('pgrep', [
    '-f',
    `temporal server start-dev --ip 127.0.0.1 --port ${serverPort()} `,
  ]).toString();
  return Number(out.trim().split('\n')[0]);
}

/**
 * The dev server's process, and with etcd the lock server's: the single-process counterparts of the
 * cluster's services and members, read the same way.
 */
function devServerProcesses(): Record<string, number[]> {
  if (options.backend !== 'etcd') return { 'dev server': [temporalServerPid()] };
  const etcdPort = new URL(SERVER_URLS.etcd.replace(/^etcd:/, 'http:')).port;
  const etcd = execFileSync('pgrep', ['-f', `listen-client-urls http://127.0.0.1:${etcdPort}`]).toString();
  return { 'dev server': [temporalServerPid()], etcd: [Number(etcd.trim().split('\n')[0])] };
}

/**
 * A lock service that already holds leases or tickets (an earlier run stopped before its drain) would
 * have the worker's sweep wake and drop them through the idle window, counted as the row's cost: a run
 * starts only on a lock service with nothing live. SQLite rows each get a fresh file.
 */
async function refuseLeftovers(): Promise<void> {
  if (options.backend === 'sqlite') return;
  const url = options.cluster ? CLUSTER.lockServiceUrl : SERVER_URLS[options.backend];
  const locks = await openLockService(url);
  try {
    const [held, waiting] = await Promise.all([locks.holdings(), locks.waits()]);
    if (held.length || waiting.length)
      throw new Error(
        `${url} holds ${held.length} leases and ${waiting.length} tickets from another run: let the leases run ` +
          'out and clear the tickets (or restart the lock server on fresh data) before measuring',
      );
  } finally {
    await locks.close();
  }
}

/** The cluster's server processes by name: Temporal's services, its PostgreSQL (every backend), etcd. */
function clusterServerProcesses(): Record<string, number[]> {
  const pidOf = (name: string) => Number(fs.readFileSync(path.join(CLUSTER.stateDir, 'pids', name), 'utf8'));
  const postmaster = Number(
    fs.readFileSync(path.join(CLUSTER.stateDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
  );
  const backends = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map(Number);
  return {
    ...Object.fromEntries(CLUSTER.temporalServices.map((name) => [name, [pidOf(name)]])),
    postgres: [postmaster, ...backends],
    ...Object.fromEntries(Object.keys(CLUSTER.etcdMembers).map((name) => [name, [pidOf(name)]])),
  };
}

/** A reading of each named group of processes (a process gone since is read as 0). */
function sumOverProcesses(
  groups: Record<string, number[]>,
  read: (pid: number) => number,
): Record<string, number> {
  const safely = (pid: number) => {
    try {
      return read(pid);
    } catch {
      return 0;
    }
  };
  return Object.fromEntries(
    Object.entries(groups).map(([name, pids]) => [name, pids.reduce((a, pid) => a + safely(pid), 0)]),
  );
}
const total = (readings: Record<string, number>) => Object.values(readings).reduce((a, b) => a + b, 0);

/** Bytes a process has caused to be written to storage (/proc/<pid>/io). */
function bytesWritten(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/io`, 'utf8').match(/^write_bytes:\s+(\d+)/m);
  return line ? Number(line[1]) : 0;
}

/** Rows Temporal's databases have inserted, updated and deleted (the cluster's PostgreSQL). */
function postgresRowsWritten(): number {
  const out = execFileSync(
    'psql',
    [
      '-h',
      '127.0.0.1',
      '-p',
      String(CLUSTER.postgresPort),
      '-U',
      'temporal',
      '-d',
      'postgres',
      '-tAc',
      "SELECT sum(tup_inserted + tup_updated + tup_deleted) FROM pg_stat_database WHERE datname IN ('temporal', 'temporal_visibility')",
    ],
    { encoding: 'utf8' },
  );
  return Number(out.trim());
}

/**
 * How many keys and leases the cluster's etcd holds, read through its JSON gateway, and the watchers
 * open on all its members (each member counts the watches of the clients connected to it).
 */
async function etcdCounts(): Promise<{ keys: number; leases: number; watchers: number }> {
  const ask = async (member: string, api: string, body: object) =>
    (await (
      await fetch(`http://${member}:2379/v3/${api}`, { method: 'POST', body: JSON.stringify(body) })
    ).json()) as { count?: string; leases?: unknown[] };
  const watchersOn = async (member: string) => {
    const metrics = await (await fetch(`http://${member}:2379/metrics`)).text();
    return Number(/^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(metrics)?.[1] ?? NaN);
  };
  const members = Object.values(CLUSTER.etcdMembers);
  const watchers = (await Promise.all(members.map((m) => watchersOn(m).catch(() => 0)))).reduce(
    (a, b) => a + b,
    0,
  );
  for (const member of members) {
    try {
      const all = {
        key: Buffer.from('\0').toString('base64'),
        range_end: Buffer.from('\0').toString('base64'),
      };
      const keys = await ask(member, 'kv/range', { ...all, count_only: true });
      const leases = await ask(member, 'lease/leases', {});
      return { keys: Number(keys.count ?? 0), leases: leases.leases?.length ?? 0, watchers };
    } catch {
      // the next member
    }
  }
  throw new Error('no etcd member answered');
}

interface Row {
  keys: number;
  waiters: number;
  holders: HolderKind;
  eventsPerHolderMin: number;
  /** This process's CPU over the idle window: the holders' keep-alives, when it sends them. */
  clientCpu: number;
  workerCpu: number;
  serverCpu: number;
  /** Each server process's share of a core (the cluster's services, its PostgreSQL and etcd members). */
  serverCpuByProcess: Record<string, number>;
  /** Bytes the persistence's processes wrote to storage a second; rows a second where it is PostgreSQL. */
  persistence: { bytesPerS: number; rowsPerS: number | null };
  /** Keys and leases the row's holders and parked waiters added to the cluster's etcd; its watchers. */
  etcd: { keys: number; leases: number; watchers: number } | null;
  callsPerS: number;
  renewalsPerS: number;
  byMethod: CallCounts;
  eventsPerWaiterMin: number;
  rssMiB: number;
  drain: {
    handoffs: number;
    lost: number;
    fifoBroken: number;
    holdersLost: number;
    seconds: number;
    rate: number;
    workerMsPerHandoff: number;
    serverMsPerHandoff: number;
    rowsPerHandoff: number | null;
  } | null;
  independentRate: number | null;
}

/**
 * Compiles the project to JavaScript in a temporary directory and answers the scale worker's script
 * there. The worker runs as `lockwarden-worker` does, as plain JavaScript: under tsx, Node's source
 * maps are on, and the SDK's workflow thread then pays for them on every promise a session creates
 * (its stack-trace hook), which made a renewal cost 9.1 ms of worker CPU instead of 7.8.
 */
function compiledWorker(): string {
  const root = path.join(__dirname, '..');
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-scale-js-'));
  execFileSync(
    process.execPath,
    [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.json'), '--outDir', outDir],
    { stdio: 'inherit' },
  );
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(outDir, 'node_modules'));
  return path.join(outDir, 'bench', 'scale', 'scaleWorker.js');
}

async function measure(
  client: Client,
  bundlePath: string,
  workerScript: string,
  keys: number,
  waiters: number,
  holders: HolderKind,
): Promise<Row> {
  const lockUrl = options.cluster
    ? CLUSTER.lockServiceUrl
    : options.backend === 'sqlite'
      ? `sqlite:${freshSqlitePath()}`
      : SERVER_URLS[options.backend];
  const taskQueue = unique('scale');
  const countsFile = path.join(os.tmpdir(), `${taskQueue}-counts.json`);
  const worker: ChildProcess = spawn(
    process.execPath,
    // SCALE_WORKER_NODE_ARGS: extra node flags for the worker, e.g. `--cpu-prof` to profile it.
    [...(process.env.SCALE_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? []), workerScript],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: serverAddress(),
        LOCK_SERVICE_URL: lockUrl,
        SCALE_TASK_QUEUE: taskQueue,
        SCALE_BUNDLE: bundlePath,
        SCALE_COUNTS: countsFile,
        SCALE_ESCALATIONS: path.join(os.tmpdir(), `${taskQueue}-escalations.jsonl`),
        ...(options.maxCached ? { SCALE_MAX_CACHED: String(options.maxCached) } : {}),
      },
    },
  );
  const readCounts = (): CallCounts => JSON.parse(fs.readFileSync(countsFile, 'utf8')) as CallCounts;
  const locks = await openLockService(lockUrl, { maxTtlMs: 600_000 });
  const etcdAtStart = options.cluster ? await etcdCounts() : null;
  const started: string[] = [];
  const keptAlive: HolderKeepAlive[] = [];
  const holderIds: string[] = [];
  // Every session's release key, kept here: a client process remembers only its newest 10,000, and
  // a row starts more sessions than that.
  const releaseKeys = new Map<string, string>();
  try {
    while (!fs.existsSync(countsFile)) await delay(200);
    const run = unique('run');
    const keyNames = Array.from({ length: keys }, (_, k) => `${run}-k${k}`);
    const placement = { taskQueue };
    // The holders, one a key, renewing at the default TTL; kept alive from here when asked.
    const holderTtl = holders === 'kept-alive' ? { holderTtlMs: DEFAULT_HOLDER_TTL_MS } : {};
    await mapConcurrently(keyNames, 50, async (key) => {
      const session = await startAcquisition(
        client,
        { key, requester: `${key}-holder`, ...holderTtl },
        placement,
      );
      started.push(session.workflowId);
      holderIds.push(session.workflowId);
      releaseKeys.set(session.workflowId, session.releaseKey);
      const answer = await awaitLeaseOf(client, session.workflowId);
      if (answer.status !== 'acquired') throw new Error(`holder of ${key} did not acquire`);
      if (holders === 'kept-alive')
        keptAlive.push(keepHolderAlive(client, session.workflowId, answer.lease, DEFAULT_HOLDER_TTL_MS));
    });
    // The waiters, in arrival order per key.
    const queues = keyNames.map((key) => ({ key, waiters: [] as string[] }));
    const starts = Array.from({ length: waiters }, (_, j) => {
      const queue = queues[j % keys]!;
      const requester = `${queue.key}-w${queue.waiters.length}`;
      queue.waiters.push(requester);
      return { key: queue.key, requester };
    });
    // One key's waiters start one after the other (so their arrival order is known); keys in parallel.
    await mapConcurrently(queues, 50, async (queue) => {
      for (const requester of queue.waiters) {
        const session = await startAcquisition(
          client,
          { key: queue.key, requester, budget: WAIT_BUDGET },
          placement,
        );
        started.push(session.workflowId);
        releaseKeys.set(session.workflowId, session.releaseKey);
        // Its ticket is taken (or, where the holder lost its lease, the key granted) before the next
        // one starts.
        const placed = async () =>
          (await locks.position({ key: queue.key, requester })) !== null ||
          (await locks.inspect(queue.key)).holder === requester;
        for (let tries = 0; !(await placed()); tries++) {
          if (tries > 3_000) throw new Error(`${requester} never queued (5 minutes)`);
          await delay(100);
        }
      }
    });
    void starts;
    // Settle: every waiter has had its first decision and parked.
    await delay(15_000);

    const workerPid = worker.pid!;
    const servers = options.cluster ? clusterServerProcesses() : devServerProcesses();
    const serverCpu = () => sumOverProcesses(servers, cpuSeconds);
    const sample = starts.filter((_, j) => j % Math.max(1, Math.floor(waiters / 50)) === 0).slice(0, 50);
    const historyLengths = () =>
      mapConcurrently(sample, 10, async ({ key, requester }) => {
        const described = await client.workflow.getHandle(acquisitionWorkflowId(key, requester)).describe();
        return described.historyLength;
      });
    const holderSample = holderIds.slice(0, 50);
    const holderHistoryLengths = () =>
      mapConcurrently(
        holderSample,
        10,
        async (id) => (await client.workflow.getHandle(id).describe()).historyLength,
      );
    const before = {
      at: performance.now(),
      worker: cpuSeconds(workerPid),
      server: serverCpu(),
      calls: readCounts(),
      history: await historyLengths(),
      holderHistory: await holderHistoryLengths(),
    };
    const afterHistoryRead = {
      written: sumOverProcesses(servers, bytesWritten),
      rowsWritten: options.cluster ? postgresRowsWritten() : null,
      client: process.cpuUsage(),
      worker: cpuSeconds(workerPid),
      server: serverCpu(),
      at: performance.now(),
    };
    console.log(`    ${keys} keys, ${waiters} waiters parked: measuring ${options.idleS} s idle`);
    const parkedEtcd = options.cluster ? await etcdCounts() : null;
    // What this row's holders and waiters added to etcd (other runs' keys may be there too).
    const etcd =
      parkedEtcd && etcdAtStart
        ? {
            keys: parkedEtcd.keys - etcdAtStart.keys,
            leases: parkedEtcd.leases - etcdAtStart.leases,
            watchers: parkedEtcd.watchers,
          }
        : null;
    await delay(options.idleS * 1_000);
    const clientCpu = process.cpuUsage(afterHistoryRead.client);
    const after = {
      at: performance.now(),
      worker: cpuSeconds(workerPid),
      server: serverCpu(),
      calls: readCounts(),
    };
    const rss = rssMiB(workerPid);
    const written = sumOverProcesses(servers, bytesWritten);
    const rowsWritten = options.cluster ? postgresRowsWritten() : null;
    const history = await historyLengths();
    const holderHistory = await holderHistoryLengths();
    const seconds = (after.at - afterHistoryRead.at) / 1000;
    const callDelta = Object.fromEntries(
      Object.keys(after.calls).map((m) => [m, (after.calls[m] ?? 0) - (before.calls[m] ?? 0)]),
    );
    const totalCalls = Object.values(callDelta).reduce((a, b) => a + b, 0);
    const events = sample.length
      ? history.reduce((a, h, i) => a + (h - before.history[i]!), 0) / sample.length
      : NaN;
    const holderEvents =
      holderHistory.reduce((a, h, i) => a + (h - before.holderHistory[i]!), 0) / holderSample.length;
    const row: Row = {
      keys,
      waiters,
      holders,
      eventsPerHolderMin: holderEvents / ((after.at - before.at) / 60_000),
      clientCpu: (clientCpu.user + clientCpu.system) / 1e6 / seconds,
      workerCpu: (after.worker - afterHistoryRead.worker) / seconds,
      serverCpu: (total(after.server) - total(afterHistoryRead.server)) / seconds,
      serverCpuByProcess: Object.fromEntries(
        Object.keys(after.server).map((name) => [
          name,
          ((after.server[name] ?? 0) - (afterHistoryRead.server[name] ?? 0)) / seconds,
        ]),
      ),
      persistence: {
        bytesPerS: (total(written) - total(afterHistoryRead.written)) / seconds,
        rowsPerS:
          rowsWritten !== null && afterHistoryRead.rowsWritten !== null
            ? (rowsWritten - afterHistoryRead.rowsWritten) / seconds
            : null,
      },
      callsPerS: totalCalls / seconds,
      renewalsPerS: (callDelta.renew ?? 0) / seconds,
      byMethod: callDelta,
      eventsPerWaiterMin: events / ((after.at - before.at) / 60_000),
      rssMiB: rss,
      etcd,
      drain: null,
      independentRate: null,
    };

    console.log(`    idle: ${formatRow(row)}`);
    // The drain releases every holder: from here this process keeps none alive.
    for (const kept of keptAlive) kept.stop();
    if (options.drain && waiters > 0) {
      const drainStart = performance.now();
      const atDrain = {
        server: total(serverCpu()),
        worker: cpuSeconds(workerPid),
        rows: options.cluster ? postgresRowsWritten() : null,
      };
      const results = await mapConcurrently(queues, keys, async (queue) => {
        let lost = 0;
        let fifoBroken = 0;
        let previous: string | null = null;
        // A holder whose session already ended (its lease lost while the worker was overloaded) has
        // nothing to release: its lease runs out, and the head takes the key after it.
        const releaseOf = (holder: string) =>
          release(
            client,
            { key: queue.key, holder },
            { releaseKey: releaseKeys.get(acquisitionWorkflowId(queue.key, holder))! },
          );
        const holderLost = !(await releaseOf(`${queue.key}-holder`)).ok;
        for (const requester of queue.waiters) {
          const answer = await Promise.race([
            awaitLeaseOf(client, acquisitionWorkflowId(queue.key, requester)),
            delay(120_000).then(() => null),
          ]);
          if (!answer || answer.status !== 'acquired') {
            lost++;
            continue;
          }
          if (previous !== null && compareTokens(answer.lease.token, previous) <= 0) fifoBroken++;
          previous = answer.lease.token;
          await releaseOf(requester);
        }
        return { lost, fifoBroken, holderLost };
      });
      const drainSeconds = (performance.now() - drainStart) / 1000;
      const lost = results.reduce((a, r) => a + r.lost, 0);
      const handoffs = Math.max(1, waiters - lost);
      const rowsAfter = options.cluster ? postgresRowsWritten() : null;
      row.drain = {
        handoffs: waiters - lost,
        lost,
        fifoBroken: results.reduce((a, r) => a + r.fifoBroken, 0),
        holdersLost: results.filter((r) => r.holderLost).length,
        seconds: drainSeconds,
        rate: (waiters - lost) / drainSeconds,
        // What one hand-off costs, over the drain: CPU of the worker and of every server process,
        // and rows the cluster's PostgreSQL wrote.
        workerMsPerHandoff: ((cpuSeconds(workerPid) - atDrain.worker) * 1000) / handoffs,
        serverMsPerHandoff: ((total(serverCpu()) - atDrain.server) * 1000) / handoffs,
        rowsPerHandoff:
          rowsAfter !== null && atDrain.rows !== null ? (rowsAfter - atDrain.rows) / handoffs : null,
      };
      // The same worker, the same run: acquire + release on independent keys, 16 chains for 15 s.
      let done = 0;
      const until = performance.now() + 15_000;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 16 }, async (_, c) => {
          while (performance.now() < until) {
            const key = `${run}-free-${c}-${done}`;
            const session = await startAcquisition(client, { key, requester: 'r' }, placement);
            const answer = await awaitLeaseOf(client, session.workflowId);
            if (answer.status !== 'acquired') throw new Error('an independent key was not acquired');
            await release(client, { key, holder: 'r' });
            done++;
          }
        }),
      );
      row.independentRate = done / ((performance.now() - started) / 1000);
    }
    return row;
  } catch (error) {
    await reportFailedTasks(client, started);
    throw error;
  } finally {
    for (const kept of keptAlive) kept.stop();
    worker.kill('SIGTERM');
    await new Promise((resolve) => worker.once('exit', resolve));
    await locks.close();
    // Sessions a row leaves running (--no-drain, a failed row) would wake on the next row's server.
    await mapConcurrently(started, 50, (id) =>
      client.workflow
        .getHandle(id)
        .terminate('scale bench: row over')
        .catch(() => undefined),
    );
  }
}

/**
 * A failed row's update failures often say only "unexpected workflow task failure": the cause is in
 * the sessions' histories, as WorkflowTaskFailed events. Prints the first few, with their session.
 */
async function reportFailedTasks(client: Client, workflowIds: string[]): Promise<void> {
  const found: string[] = [];
  await mapConcurrently(workflowIds, 20, async (id) => {
    if (found.length >= 5) return;
    const history = await client.workflow
      .getHandle(id)
      .fetchHistory()
      .catch(() => null);
    for (const event of history?.events ?? []) {
      const failed = event.workflowTaskFailedEventAttributes;
      if (failed && found.length < 5)
        found.push(`${id}: cause ${failed.cause}, ${failed.failure?.message ?? 'no message'}`);
    }
  });
  console.log(
    found.length
      ? `    workflow tasks that failed:\n${found.map((f) => `      ${f}`).join('\n')}`
      : '    no workflow task failed in the row',
  );
}

/** Persistence writes a second: rows (PostgreSQL) and bytes to storage (any). */
function persistence(r: Row): string {
  const kib = `${(r.persistence.bytesPerS / 1024).toFixed(0)} KiB`;
  return r.persistence.rowsPerS === null ? kib : `${r.persistence.rowsPerS.toFixed(0)} rows, ${kib}`;
}

function formatRow(r: Row): string {
  const pct = (v: number) => `${(v * 100).toFixed(1)} %`;
  const drain = r.drain
    ? `${r.drain.handoffs} in ${r.drain.seconds.toFixed(1)} s (${r.drain.rate.toFixed(1)}/s), lost ${r.drain.lost}, FIFO broken ${r.drain.fifoBroken}, holders that had lost their lease ${r.drain.holdersLost}; ` +
      `a hand-off: worker ${r.drain.workerMsPerHandoff.toFixed(1)} ms, servers ${r.drain.serverMsPerHandoff.toFixed(1)} ms CPU` +
      (r.drain.rowsPerHandoff === null ? '' : `, ${r.drain.rowsPerHandoff.toFixed(0)} rows`)
    : '–';
  const ratio = r.drain && r.independentRate ? `${(r.drain.rate / r.independentRate).toFixed(2)}×` : '–';
  // With no waiters, the worker's CPU is the holders' renewals (and the worker's own idle polling).
  const perRenewal =
    r.waiters === 0 && r.renewalsPerS > 0
      ? ` (${((r.workerCpu * 1000) / r.renewalsPerS).toFixed(2)} ms a renewal)`
      : '';
  const events = Number.isNaN(r.eventsPerWaiterMin) ? '–' : r.eventsPerWaiterMin.toFixed(2);
  return `| ${r.holders} | ${r.waiters} | ${r.keys} | ${r.eventsPerHolderMin.toFixed(2)} | ${pct(r.clientCpu)} | ${pct(r.workerCpu)}${perRenewal} | ${pct(r.serverCpu)} | ${persistence(r)} | ${r.callsPerS.toFixed(1)} (renewals ${r.renewalsPerS.toFixed(1)}) | ${events} | ${r.rssMiB.toFixed(0)} MiB | ${drain} | ${r.independentRate?.toFixed(1) ?? '–'} | ${ratio} |`;
}

/** The rows as a JSON evidence report beside the table: what a post-mortem cites. */
function writeEvidence(rows: Row[], run: string, file: string): void {
  const evidence = new EvidenceFile('scale-bench', run);
  for (const r of rows) {
    const drain = r.drain ? `, drain ${r.drain.handoffs} in ${r.drain.seconds.toFixed(1)} s` : '';
    evidence.figure(
      `${r.waiters} parked waiters on ${r.keys} keys`,
      `worker CPU ${(r.workerCpu * 100).toFixed(1)} %, ${r.callsPerS.toFixed(1)} lock calls/s${drain}`,
    );
  }
  evidence.write(file);
}

async function main(): Promise<void> {
  const freshData = options.projectServer
    ? null
    : fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-scale-temporal-'));
  if (options.cluster) clusterUp();
  else serverScript('start', freshData);
  if (options.backend !== 'sqlite' && !options.cluster)
    execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'lock-servers.sh'), 'start'], {
      stdio: 'ignore',
    });
  await refuseLeftovers();
  const bundlePath = path.join(os.tmpdir(), `${unique('scale-bundle')}.js`);
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
  fs.writeFileSync(bundlePath, bundle.code);
  const workerScript = compiledWorker();
  const client = new Client({ connection: await connectTemporal({ address: serverAddress() }) });
  const header = [
    `scale, ${options.cluster ? "the cluster (scripts/cluster.sh: Temporal's services on PostgreSQL, three-member etcd)" : `${options.backend}, ${options.projectServer ? "the project's dev server" : 'a fresh dev server'}`}, idle window ${options.idleS} s, ${os.cpus().length} cores, workflow cache ${options.maxCached ?? 'the worker default'}, ${new Date().toISOString()}`,
    '',
    '| holders | waiters | keys | history events / holder / min | bench process CPU (keep-alives) | worker CPU | server CPU | persistence writes/s | lock calls/s | history events / waiter / min | worker RSS | drain | independent keys/s | drain ÷ independent |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  console.log(header.join('\n'));
  const rows: Row[] = [];
  const lines: string[] = [];
  const out = path.join(__dirname, 'results', `${resultsName()}.md`);
  // Written after every row: a row that fails (a worker too loaded to place its waiters) is a line of
  // the table too, and the rows before it are kept.
  const write = () => {
    // Each server process's share of a core, row by row: where a cluster's idle cost sits.
    const byProcess = rows.map(
      (r) =>
        `- ${r.waiters} waiters on ${r.keys} keys (${r.holders}): ` +
        Object.entries(r.serverCpuByProcess)
          .map(([name, cpu]) => `${name} ${(cpu * 100).toFixed(1)} %`)
          .join(', ') +
        (r.etcd
          ? `; the row added ${r.etcd.keys} keys and ${r.etcd.leases} leases to etcd, which had ${r.etcd.watchers} watchers open`
          : ''),
    );
    fs.writeFileSync(
      out,
      [...header, ...lines, '', 'Server CPU by process, over the idle window:', '', ...byProcess, ''].join(
        '\n',
      ),
    );
    writeCharts(rows);
    writeEvidence(rows, header[0] ?? 'scale', out.replace(/\.md$/, '.json'));
  };
  try {
    const shapes =
      options.rows ?? options.keys.flatMap((keys) => options.waiters.map((waiters) => ({ keys, waiters })));
    const plan = shapes.flatMap((shape) => options.holders.map((holders) => ({ ...shape, holders })));
    for (const { keys, waiters, holders } of plan) {
      try {
        const row = await measure(client, bundlePath, workerScript, keys, waiters, holders);
        rows.push(row);
        lines.push(formatRow(row));
        console.log(formatRow(row));
        console.log(`    calls by method: ${JSON.stringify(row.byMethod)}`);
      } catch (error) {
        // An update's failure says little by itself: its cause is the session's answer.
        const reason =
          error instanceof Error
            ? [error.message, error.cause instanceof Error ? error.cause.message : null]
                .filter(Boolean)
                .join(': ')
            : String(error);
        lines.push(`| ${holders} | ${waiters} | ${keys} | failed: ${reason} | | | | | | | | | |`);
        console.log(lines.at(-1));
      }
      write();
    }
  } finally {
    await client.connection.close();
    if (freshData) {
      serverScript('stop', freshData);
      fs.rmSync(freshData, { recursive: true, force: true });
    }
  }
  console.log(`written to ${path.relative(process.cwd(), out)}`);
}

const resultsName = (): string => options.out ?? `scale-${options.backend}`;

/** Worker CPU, server CPU (cores) and worker RSS (GiB) against waiters, a line per key count. */
function writeCharts(rows: Row[]): void {
  if (!rows.some((r) => r.waiters > 0)) return;
  const byKeys = [...new Set(rows.map((r) => r.keys))];
  const charted = (pick: (r: Row) => number, label: string) =>
    byKeys.map((keys) => ({
      name: `${label}, ${keys} keys`,
      points: rows.filter((r) => r.keys === keys && r.waiters > 0).map((r) => ({ x: r.waiters, y: pick(r) })),
    }));
  const cpu = [...charted((r) => r.workerCpu, 'worker'), ...charted((r) => r.serverCpu, 'server')];
  const rss = charted((r) => r.rssMiB / 1024, 'worker RSS');
  const top = (series: typeof cpu) =>
    Math.max(1, Math.ceil(Math.max(...series.flatMap((s) => s.points.map((p) => p.y)))));
  const files = {
    [`${resultsName()}-cpu.svg`]: lineChart(
      'Idle CPU with parked waiters',
      'parked waiters',
      'cores',
      cpu,
      top(cpu),
    ),
    [`${resultsName()}-rss.svg`]: lineChart(
      'Worker memory with parked waiters',
      'parked waiters',
      'GiB',
      rss,
      top(rss),
    ),
  };
  for (const [name, svg] of Object.entries(files))
    fs.writeFileSync(path.join(__dirname, 'results', name), svg);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
