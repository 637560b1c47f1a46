// What users feel under contention, in one run, on one dev server and one lock service:
//   P1 one uncontended acquire + release through the client, against a workflow of two no-op
//      activities and a floor workflow of the session's shape;
//   P2 N requesters on one key (holds of 20 ms, 200 ms and 2 s), against a plain full-jitter loop
//      and fixed 200 ms polling;
//   P3 the hand-off as the callers see it (release() called to the next acquire answered) and on the
//      service clock, against a bare signal round trip;
//   P4 independent keys: acquisitions a second against workflows of two no-op activities a second;
//   P5 decisions and history events per acquisition in P2;
//   a chart of utilization against N, and (--all-backends) the P2 row on Redis, PostgreSQL and etcd;
//   (--tracing) P1 and P2 with tracing off, then on (OTLP to a Jaeger of the run's own), side by side.
//     npx tsx bench/contention.ts [--backend sqlite|redis|postgres|etcd] [--all-backends] [--quick]
//     npx tsx bench/contention.ts --tracing [--quick]
//     npx tsx bench/contention.ts --cluster [--quick]   (on scripts/cluster.sh's Temporal and etcd)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { Command, Option } from 'commander';
import { createActivities } from '../activities';
import { createMetrics } from '../activities/metrics';
import { createSessionWaker } from '../activities/sessionSignals';
import { acquire, release, startAwaitingLease, stateOf } from '../client/lockwardenClient';
import type { LockService } from '../locks/lockService';
import { openLockService } from '../locks/openLockService';
import { SERVER_URLS } from '../devkit/servers';
import { percentile, timeOnce } from './stats';
import { connectTestEnv, installQuietRuntime, quietBundlerLogger, silentLog } from '../devkit/temporal';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { activitySummaries } from '../devkit/history';
import {
  type ContentionRun,
  countingLocks,
  fixedPollingRun,
  floorRun,
  fullJitterRun,
  lockwardenRun,
} from './contenders';
import { createFloorMutex } from './floorMutex';
import { floorFinish, floorGo, floorReady } from './floorWorkflows';
import { sessionLogSinks } from '../worker/sessionLogSinks';
import { sessionMetricsSinks } from '../worker/sessionMetricsSinks';
import { EvidenceFile } from './evidenceFile';
import { CLUSTER, clusterUp } from '../devkit/cluster';
import { lineChart } from './svgChart';
import { Jaeger } from '../devkit/jaeger';
import { type Tracing, tracingFromEnv } from '../temporal/tracing';
import { lockwardenActivityInterceptors } from '../worker/localAttemptBound';

/** What each figure's run is given: the client, the worker's queue, and the counted lock service. */
type BenchContext = { client: Client; taskQueue: string; locks: ReturnType<typeof countingLocks> };

const BACKENDS = ['sqlite', 'redis', 'postgres', 'etcd'] as const;
type Backend = (typeof BACKENDS)[number];

const options = new Command('contention')
  .addOption(new Option('--backend <name>', 'lock service').choices(BACKENDS).default('sqlite'))
  .option('--all-backends', 'also the P2 row (N = 32, 200 ms holds) on the other backends', false)
  .option('--quick', 'fewer samples and no chart (a smoke run)', false)
  .option('--cluster', "on scripts/cluster.sh's cluster: its Temporal services and three-member etcd", false)
  .option('--tracing', "only P1 and P2's 200 ms row, with tracing off and then on (OTLP to Jaeger)", false)
  .parse()
  .opts<{ backend: Backend; allBackends: boolean; quick: boolean; cluster: boolean; tracing: boolean }>();
if (options.cluster) options.backend = 'etcd';
/** What the run is on: a backend beside the dev server, or the cluster. */
const site = options.cluster ? 'cluster' : options.backend;

const N = 32;
const CHART_NS = [1, 4, 16, 32, 64];
const SAMPLES = options.quick ? 10 : 40;

function openBackend(backend: Backend): Promise<LockService> {
  const url = options.cluster
    ? CLUSTER.lockServiceUrl
    : backend === 'sqlite'
      ? `sqlite:${freshSqlitePath()}`
      : SERVER_URLS[backend];
  return openLockService(url, { maxTtlMs: 60_000 });
}

const ms = (value: number) => `${value.toFixed(1)} ms`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

/** A workflow that runs two no-op activities, started and awaited: the plain floor of P1 and P4. */
const twoActivities = (client: Client, taskQueue: string) =>
  client.workflow.execute('floorTwoActivities', { taskQueue, workflowId: unique('two') });

/**
 * What tracing costs: P1 and P2's 200 ms row with tracing off, then on (every span exported over
 * OTLP to a Jaeger started for the run), on fresh workers and queues of the same dev server. Off runs
 * first: once a tracer provider is registered, it stays for the process.
 */
async function tracingCost(
  runOn: <T>(
    backend: Backend,
    fn: (ctx: BenchContext) => Promise<T>,
    traced?: { tracing: Tracing; bundle: Awaited<ReturnType<typeof bundleWorkflowCode>> } | null,
  ) => Promise<T>,
  p2: (ctx: BenchContext, n: number, holdMs: number) => Promise<{ lockwarden: ContentionRun }>,
  say: (line: string) => void,
) {
  const measure = (ctx: BenchContext) =>
    uncontended(ctx.client, ctx.taskQueue).then(async (one) => ({
      one,
      many: (await p2(ctx, N, 200)).lockwarden,
    }));
  const off = await runOn(options.backend, measure);
  const jaeger = await Jaeger.start();
  try {
    const tracing = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint }, 'lockwarden-bench')!;
    const bundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('./benchWorkflows'),
      plugins: [tracing.plugin],
      logger: quietBundlerLogger,
    });
    const on = await runOn(options.backend, measure, { tracing, bundle });
    await tracing.shutdown();
    say(`# tracing cost, ${options.backend} lock service, ${new Date().toISOString()}`);
    say('');
    say('| figure | tracing off | tracing on (OTLP/HTTP to Jaeger) | on / off |');
    say('| --- | --- | --- | --- |');
    say(
      `| P1 uncontended acquire + release, p50 | ${ms(off.one.session)} | ${ms(on.one.session)} | ${ratio(on.one.session, off.one.session)} |`,
    );
    say(
      `| P1 baseline: a workflow of 2 no-op activities, p50 | ${ms(off.one.two)} | ${ms(on.one.two)} | ${ratio(on.one.two, off.one.two)} |`,
    );
    say(
      `| P2 utilization, N = ${N}, 200 ms holds | ${off.many.utilization.toFixed(3)} | ${on.many.utilization.toFixed(3)} | ${ratio(on.many.utilization, off.many.utilization)} |`,
    );
    say(
      `| P2 lock calls per acquisition | ${off.many.lockCallsPerAcquisition.toFixed(1)} | ${on.many.lockCallsPerAcquisition.toFixed(1)} | – |`,
    );
  } finally {
    await jaeger.stop();
  }
}

/**
 * P1: one uncontended acquire + release, the floor workflow of the same shape (two updates, each
 * answered by a no-op activity) and a workflow of two no-op activities, interleaved.
 */
async function uncontended(client: Client, taskQueue: string) {
  const session: number[] = [];
  const floor: number[] = [];
  const two: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    two.push(await timeOnce(() => twoActivities(client, taskQueue)));
    session.push(
      await timeOnce(async () => {
        const { lease, session: started } = await acquire(
          client,
          { key: unique('p1'), requester: 'r' },
          { taskQueue },
        );
        await release(client, lease);
        await started.result();
      }),
    );
    floor.push(
      await timeOnce(async () => {
        const handle = await client.workflow.start('floorSession', {
          taskQueue,
          workflowId: unique('floor'),
        });
        await handle.executeUpdate(floorReady);
        await handle.executeUpdate(floorFinish);
        await handle.result();
      }),
    );
  }
  return { session: percentile(session, 50), floor: percentile(floor, 50), two: percentile(two, 50) };
}

/**
 * P3: the hand-off, on the service clock (release to the next grant) and as the callers see it (the
 * holder's release() called to the next caller's wait answered, the wait started with its session),
 * and the bare signal round trip: one workflow task dispatched by a signal, as the client sees it.
 */
async function handoff(client: Client, taskQueue: string) {
  const key = unique('p3');
  const samples: number[] = [];
  const seen: number[] = [];
  let holder = (await acquire(client, { key, requester: unique('r') }, { taskQueue })).lease;
  for (let i = 0; i < SAMPLES; i++) {
    const waiter = await startAwaitingLease(client, { key, requester: unique('r') }, { taskQueue });
    while ((await stateOf(client, waiter.session.workflowId)).phase !== 'queued') await delay(20);
    await delay(Math.random() * 50);
    const releaseCalled = performance.now();
    const released = await release(client, holder);
    if (!released.ok) throw new Error(`release refused: ${released.reason}`);
    const next = await waiter.news;
    seen.push(performance.now() - releaseCalled);
    if (next.status !== 'acquired') throw new Error(`waiter ended: ${next.outcome.status}`);
    const lease = next.lease;
    samples.push(lease.grantedAt - released.serviceTime);
    holder = lease;
  }
  await release(client, holder);
  const bare: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const handle = await client.workflow.start('floorSignalled', { taskQueue, workflowId: unique('bare') });
    await delay(50);
    bare.push(await timeOnce(async () => (await handle.signal(floorGo), handle.result())));
  }
  return {
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    seenP50: percentile(seen, 50),
    seenP99: percentile(seen, 99),
    bare: percentile(bare, 50),
  };
}

/** P4: `count` acquisitions on distinct keys, `concurrency` at a time, and as many floor workflows. */
async function independentKeys(client: Client, taskQueue: string, count = 96, concurrency = 16) {
  const rate = async (one: () => Promise<unknown>) => {
    let next = 0;
    const elapsed = await timeOnce(() =>
      Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < count) await one();
        }),
      ),
    );
    return (count / elapsed) * 1000;
  };
  const sessions = await rate(async () => {
    const { lease, session } = await acquire(client, { key: unique('p4'), requester: 'r' }, { taskQueue });
    await release(client, lease);
    await session.result();
  });
  const floor = await rate(async () => {
    const handle = await client.workflow.start('floorSession', { taskQueue, workflowId: unique('floor') });
    await handle.executeUpdate(floorReady);
    await handle.executeUpdate(floorFinish);
    await handle.result();
  });
  const two = await rate(() => twoActivities(client, taskQueue));
  return { sessions, floor, two };
}

/** P5: decisions and history events per acquisition, from the histories of a P2 run. */
async function perAcquisition(client: Client, run: ContentionRun) {
  let decisions = 0;
  let events = 0;
  for (const id of run.workflowIds) {
    const history = await client.workflow.getHandle(id).fetchHistory();
    decisions += activitySummaries(history).filter((s) => s.startsWith('retry decision')).length;
    events += history.events?.length ?? 0;
  }
  return { decisions: decisions / run.n, events: events / run.n };
}

async function main(): Promise<void> {
  execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'temporal-server.sh'), 'start'], {
    stdio: 'ignore',
  });
  execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'lock-servers.sh'), 'start'], {
    stdio: 'ignore',
  });
  if (options.cluster) clusterUp();
  installQuietRuntime();
  const env = await connectTestEnv(options.cluster ? CLUSTER.temporalAddress : undefined);
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./benchWorkflows'),
    logger: quietBundlerLogger,
  });
  const lines: string[] = [];
  const say = (line: string) => {
    console.log(line);
    lines.push(line);
  };

  // A worker on a fresh queue and lock service; with `traced`, the worker, its bundle and the client
  // carry Temporal's OpenTelemetry plugin, as a traced deployment's do.
  const runOn = async <T>(
    backend: Backend,
    fn: (ctx: { client: Client; taskQueue: string; locks: ReturnType<typeof countingLocks> }) => Promise<T>,
    traced: { tracing: Tracing; bundle: typeof workflowBundle } | null = null,
  ) => {
    const opened = await openBackend(backend);
    const locks = countingLocks(opened);
    const taskQueue = unique('bench');
    const metrics = createMetrics();
    const plugins = traced ? [traced.tracing.plugin] : [];
    const client = traced ? new Client({ connection: env.connection, plugins }) : env.client;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: traced?.bundle ?? workflowBundle,
      plugins,
      interceptors: { activity: lockwardenActivityInterceptors },
      sinks: { ...sessionMetricsSinks(metrics), ...sessionLogSinks(silentLog) },
      activities: {
        ...createActivities({
          locks: locks.service,
          log: silentLog,
          waker: createSessionWaker(client, silentLog),
          metrics,
        }),
        ...createFloorMutex(client),
        noop: async () => undefined,
      },
    });
    try {
      return await worker.runUntil(fn({ client, taskQueue, locks }));
    } finally {
      await opened.close();
    }
  };
  const p2 = async (
    ctx: { client: Client; taskQueue: string; locks: ReturnType<typeof countingLocks> },
    n: number,
    holdMs: number,
  ) => ({
    lockwarden: await lockwardenRun(ctx.client, ctx.taskQueue, ctx.locks.calls, n, holdMs),
    floor: await floorRun(ctx.client, ctx.taskQueue, n, holdMs),
    jitter: await fullJitterRun(ctx.locks.service, ctx.locks.calls, n, holdMs),
    polling: await fixedPollingRun(ctx.locks.service, ctx.locks.calls, n, holdMs),
  });
  const p2Row = (label: string, r: Awaited<ReturnType<typeof p2>>) =>
    `| ${label} | ${r.lockwarden.utilization.toFixed(3)} (${r.lockwarden.lockCallsPerAcquisition.toFixed(1)} calls) | ` +
    `${r.floor.utilization.toFixed(3)} (${ratio(r.lockwarden.utilization, r.floor.utilization)}) | ` +
    `${r.jitter.utilization.toFixed(3)} (${r.jitter.lockCallsPerAcquisition.toFixed(1)}) | ` +
    `${r.polling.utilization.toFixed(3)} (${r.polling.lockCallsPerAcquisition.toFixed(1)}) |`;

  const runLine = `contention, ${options.cluster ? 'the cluster (Temporal services on PostgreSQL, three-member etcd)' : `${options.backend} lock service`}, ${new Date().toISOString()}`;
  const evidence = new EvidenceFile('contention-bench', runLine);
  /** A row of the table that a reader acts on, kept in the JSON report too. */
  const figure = (name: string, value: string, baseline: string, ratioText: string) =>
    evidence.figure(name, `${value} (${baseline}, ${ratioText})`);
  try {
    if (options.tracing) {
      await tracingCost(runOn, p2, say);
      const out = path.join(__dirname, 'results', 'contention-tracing.md');
      fs.writeFileSync(out, lines.join('\n') + '\n');
      return;
    }
    await runOn(options.backend, async (ctx) => {
      say(`# ${runLine}`);
      say('');
      const one = await uncontended(ctx.client, ctx.taskQueue);
      figure(
        'P1 uncontended acquire + release, p50',
        ms(one.session),
        `a workflow of 2 no-op activities ${ms(one.two)}`,
        ratio(one.session, one.two),
      );
      say('| figure | lockwarden | baseline | ratio | goal |');
      say('| --- | --- | --- | --- | --- |');
      say(
        `| P1 uncontended acquire + release, p50 | ${ms(one.session)} | a workflow of 2 no-op activities ${ms(one.two)} | ${ratio(one.session, one.two)} | ≤ 1.0× |`,
      );
      say(
        `| P1, against the session's shape | ${ms(one.session)} | floor workflow, 2 updates ${ms(one.floor)} | ${ratio(one.session, one.floor)} | – |`,
      );
      const hand = await handoff(ctx.client, ctx.taskQueue);
      figure(
        'P3 hand-off p50, client-observed',
        ms(hand.seenP50),
        `2 × bare signal round trip ${ms(2 * hand.bare)}`,
        ratio(hand.seenP50, 2 * hand.bare),
      );
      figure(
        'P3 hand-off p99, client-observed',
        ms(hand.seenP99),
        `its own p50 ${ms(hand.seenP50)}`,
        ratio(hand.seenP99, hand.seenP50),
      );
      say(
        `| P3 hand-off p50, client-observed (release() called → next acquire answered) | ${ms(hand.seenP50)} | 2 × bare signal round trip ${ms(2 * hand.bare)} | ${ratio(hand.seenP50, 2 * hand.bare)} | ≤ 1.0× |`,
      );
      say(
        `| P3 hand-off p99, client-observed | ${ms(hand.seenP99)} | its own p50 ${ms(hand.seenP50)} | ${ratio(hand.seenP99, hand.seenP50)} | ≤ 3× |`,
      );
      say(
        `| P3 hand-off p50 (service clock: release → next grant) | ${ms(hand.p50)} | bare signal round trip ${ms(hand.bare)} | ${ratio(hand.p50, hand.bare)} | – |`,
      );
      say(
        `| P3 hand-off p99 (service clock) | ${ms(hand.p99)} | its own p50 ${ms(hand.p50)} | ${ratio(hand.p99, hand.p50)} | – |`,
      );
      const keys = await independentKeys(ctx.client, ctx.taskQueue);
      figure(
        'P4 independent keys, acquisitions/s',
        keys.sessions.toFixed(1),
        `workflows of 2 no-op activities/s ${keys.two.toFixed(1)}`,
        ratio(keys.sessions, keys.two),
      );
      say(
        `| P4 independent keys, acquisitions/s (16 at a time) | ${keys.sessions.toFixed(1)} | workflows of 2 no-op activities/s ${keys.two.toFixed(1)} | ${ratio(keys.sessions, keys.two)} | ≥ 0.8× |`,
      );
      say(
        `| P4, against the session's shape | ${keys.sessions.toFixed(1)} | floor workflows/s ${keys.floor.toFixed(1)} | ${ratio(keys.sessions, keys.floor)} | – |`,
      );
      say('');
      say(
        `| P2, N = ${N}, one key: utilization (lock calls per acquisition) | lockwarden | Temporal floor (lockwarden's share of it) | full-jitter loop (50 ms, cap 2 s) | fixed 200 ms polling |`,
      );
      say('| --- | --- | --- | --- | --- |');
      const slow = await p2(ctx, N, 200);
      say(p2Row('hold 200 ms', slow));
      const fast = await p2(ctx, N, 20);
      say(p2Row('hold 20 ms', fast));
      const long = await p2(ctx, N, 2_000);
      say(p2Row('hold 2 s', long));
      for (const [hold, r] of [
        ['200 ms', slow],
        ['20 ms', fast],
        ['2 s', long],
      ] as const)
        evidence.figure(
          `P2 utilization, ${N} waiters, hold ${hold}`,
          `${r.lockwarden.utilization.toFixed(3)}; Temporal floor ${r.floor.utilization.toFixed(3)}, full-jitter loop ${r.jitter.utilization.toFixed(3)}, fixed polling ${r.polling.utilization.toFixed(3)}`,
        );
      say('');
      for (const [label, run] of [
        ['200 ms', slow.lockwarden],
        ['20 ms', fast.lockwarden],
      ] as const) {
        const per = await perAcquisition(ctx.client, run);
        const p5 = `${per.decisions.toFixed(2)} retry decisions and ${per.events.toFixed(1)} history events per acquisition`;
        say(`P5 (hold ${label}): ${p5}`);
        evidence.figure(`P5, hold ${label}`, p5);
      }
      if (!options.quick) {
        const series = {
          lockwarden: [] as { x: number; y: number }[],
          floor: [] as { x: number; y: number }[],
          jitter: [] as { x: number; y: number }[],
          polling: [] as { x: number; y: number }[],
        };
        for (const n of CHART_NS) {
          const r = await p2(ctx, n, 200);
          for (const name of ['lockwarden', 'floor', 'jitter', 'polling'] as const)
            series[name].push({ x: n, y: r[name].utilization });
        }
        const svg = lineChart(
          `Utilization on one key, 200 ms holds (${options.backend})`,
          'requesters (N)',
          'utilization',
          [
            { name: 'lockwarden', points: series.lockwarden },
            { name: 'Temporal floor (no lock service)', points: series.floor },
            { name: 'full-jitter loop', points: series.jitter },
            { name: 'fixed 200 ms polling', points: series.polling },
          ],
        );
        for (const [name, points] of Object.entries(series))
          say(
            `utilization at 200 ms holds, ${name}: ${points.map((p) => `N=${p.x} ${p.y.toFixed(2)}`).join(', ')}`,
          );
        const out = path.join(__dirname, 'results', `contention-${site}.svg`);
        fs.mkdirSync(path.dirname(out), { recursive: true });
        fs.writeFileSync(out, svg);
        say(`chart: ${path.relative(process.cwd(), out)} (N = ${CHART_NS.join(', ')})`);
      }
    });
    if (options.allBackends) {
      say('');
      say(
        `| P2, N = ${N}, hold 200 ms, by backend | lockwarden | Temporal floor (share) | full-jitter loop | fixed 200 ms polling |`,
      );
      say('| --- | --- | --- | --- | --- |');
      for (const backend of BACKENDS.filter((b) => b !== options.backend)) {
        say(p2Row(backend, await runOn(backend, (ctx) => p2(ctx, N, 200))));
      }
    }
    const out = path.join(__dirname, 'results', `contention-${site}.md`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, lines.join('\n') + '\n');
    evidence.write(out.replace(/\.md$/, '.json'));
  } finally {
    await env.teardown();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
