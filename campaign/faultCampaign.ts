// A fault campaign: many sessions take a few keys' locks and write through fenced resources, while a
// seeded nemesis pauses and kills workers and crashes the lock server and the Temporal dev server
// (on the cluster: kills etcd's leader and a history service, cuts off members and worker hosts).
// A checker then holds what was recorded to lockwarden's claims and counts every violation.
//   npx tsx campaign/faultCampaign.ts --backend <sqlite|redis|postgres|etcd|zookeeper> --writes N --seed S [--short] [--tls]
//   npx tsx campaign/faultCampaign.ts --cluster [--backend zookeeper] --writes N --seed S [--short]   (scripts/cluster.sh's)
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Command, Option } from 'commander';
import { quietBundlerLogger } from '../devkit/temporal';
import { followEtcdLeaseHistory, type LeaseHistoryFollower } from '../locks/etcdLeaseHistory';
import { lockServiceUrlSchema } from '../locks/openLockService';
import { withLockwardenWorkflows } from '../worker/lockwardenPlugin';
import { type Backend, campaignDirs } from './campaignServers';
import { clusterSite, localSite } from './campaignSites';
import { EvidenceFile } from '../bench/evidenceFile';
import { campaignWriter, checkCampaign, type SessionOutcome, VIOLATION_KINDS } from './checker';
import { readJournals } from './journal';
import { outcomesOfAll, runSession, runsPerSessionId } from './sessions';
import { Nemesis, seededRandom } from './nemesis';
import { openResources } from './resources';
import { WorkerPool } from './workerPool';
import { wholeNumber } from '../bench/cliArgs';

const BACKENDS = ['sqlite', 'redis', 'postgres', 'etcd', 'zookeeper'] as const;
const positive = wholeNumber(1);
const options = new Command('faultCampaign')
  .addOption(new Option('--backend <name>', 'lock service').choices(BACKENDS).default('sqlite'))
  .option('--writes <n>', 'fenced writes to attempt, at least', positive, 10_000)
  .option('--seed <n>', 'seed of the fault schedule and the workload', positive, 1)
  .option('--short', 'one fault of each kind, early, then none (the CI run)', false)
  .option('--tls', 'the lock server over TLS with credentials, as production runs it (not sqlite)', false)
  .option('--cluster', "on scripts/cluster.sh's cluster (its etcd, Temporal's services, worker hosts)", false)
  .option('--no-faults', 'no nemesis: the same workload without faults, for a baseline')
  .option('--keys <n>', 'lock keys, half on each fenced resource', positive, 8)
  .option('--concurrency <n>', 'sessions in flight', positive, 32)
  .parse()
  .opts<{
    backend: Backend;
    writes: number;
    seed: number;
    short: boolean;
    cluster: boolean;
    tls: boolean;
    faults: boolean;
    keys: number;
    concurrency: number;
  }>();

const TTL_MS = 3_000;
const TASK_QUEUE = 'campaign';
/** How long a session may take to reach an outcome once the campaign stops starting new ones. */
const DRAIN_MS = 5 * 60_000;
/** How long past the drain a session's driver keeps asking Temporal before it counts it lost. */
const SESSION_GRACE_MS = 10 * 60_000;

if (options.cluster && options.backend !== 'etcd' && options.backend !== 'zookeeper') {
  // The cluster's lock services are its three-member etcd (the default) and its ZooKeeper ensemble.
  if (process.argv.includes('--backend')) throw new Error('--cluster runs on etcd or zookeeper');
  options.backend = 'etcd';
}
if (options.tls && (options.cluster || options.backend === 'sqlite' || options.backend === 'zookeeper'))
  throw new Error(
    '--tls runs a redis, postgres or etcd server of its own over TLS: not with --cluster, sqlite or zookeeper',
  );
/** What the campaign runs on: a backend on loopback, or the cluster. */
const where = options.cluster
  ? `cluster${options.backend === 'zookeeper' ? '-zookeeper' : ''}`
  : `${options.backend}${options.tls ? '-tls' : ''}`;
const say = (line: string) => console.log(`[campaign ${where}] ${line}`);

async function main(): Promise<number> {
  const started = Date.now();
  const tag = `${where}-seed${options.seed}-${new Date(started).toISOString().replace(/[:.]/g, '-')}`;
  const dirs = campaignDirs(tag);
  const random = seededRandom(options.seed);
  say(
    `seed ${options.seed}, ${options.writes} writes, ${options.keys} keys, state in ${path.relative(process.cwd(), dirs.run)}`,
  );

  // Bundled before any server starts: a bundle that fails to build leaves nothing running.
  const bundlePath = path.join(dirs.run, 'workflow-bundle.js');
  const bundle = await bundleWorkflowCode({
    workflowsPath: withLockwardenWorkflows(require.resolve('./campaignWorkflows')),
    logger: quietBundlerLogger,
  });
  fs.writeFileSync(bundlePath, bundle.code);
  const site = options.cluster
    ? await clusterSite(options.backend as 'etcd' | 'zookeeper')
    : await localSite(options.backend, dirs, options.tls);
  // Followed from before the first worker starts, so every lease change of the run is seen.
  const serviceOrder = await followServiceOrder(site.lockUrl);
  const resourceTargets = {
    sqlitePath: path.join(dirs.run, 'resource.sqlite'),
    postgresUrl: site.postgresResource,
  };
  const resources = await openResources(resourceTargets);
  const pool = new WorkerPool({
    size: 3,
    runDir: dirs.run,
    env: {
      ...site.workerEnv,
      CAMPAIGN_TASK_QUEUE: TASK_QUEUE,
      CAMPAIGN_BUNDLE: bundlePath,
      CAMPAIGN_SQLITE_RESOURCE: resourceTargets.sqlitePath,
      CAMPAIGN_ESCALATIONS: path.join(dirs.run, 'escalations.jsonl'),
    },
    ...(site.hostOf ? { hostOf: site.hostOf } : {}),
  });
  pool.startAll();
  const client = new Client({ connection: await connectTemporal({ address: site.temporalAddress }) });
  const nemesis = new Nemesis(
    random,
    {
      workers: pool.size,
      pauseWorker: (i, ms) => pool.pause(i, ms),
      killWorker: (i) => pool.kill(i),
      ...site.faults(pool),
    },
    {
      ...(options.short
        ? { gapMs: [3_000, 5_000], pauseMs: [TTL_MS + 1_000, TTL_MS + 2_500], rounds: 1 }
        : { gapMs: [5_000, 12_000], pauseMs: [TTL_MS + 1_000, TTL_MS + 4_000], rounds: Infinity }),
      partitionMs: [3_000, 10_000],
      latencyMs: [100, 500],
      slowForMs: [5_000, 15_000],
    } as const,
    say,
  );

  const keys = Array.from(
    { length: options.keys },
    (_, i) => `c${options.seed}-k${i}${i % 2 ? '-pg' : ''}-${started}`,
  );
  const outcomes: Record<string, SessionOutcome> = {};
  const attempted = async () =>
    (await Promise.all(keys.map((k) => resources.attempts(k)))).reduce((n, list) => n + list.length, 0);

  try {
    await delay(3_000); // workers up
    if (options.faults) nemesis.start();
    let seq = 0;
    const inflight = new Set<Promise<void>>();
    const launch = () => {
      const n = seq++;
      const id = `campaign/${tag}/${n}`;
      const session = runSession(
        client,
        id,
        {
          key: keys[n % keys.length]!,
          requester: campaignWriter(n).holder,
          proves: campaignWriter(n).proves,
          records: 1 + Math.floor(random() * 5),
          ttlMs: TTL_MS,
          workMs: 10 + Math.floor(random() * 40),
        },
        { taskQueue: TASK_QUEUE, deadline: Date.now() + DRAIN_MS + SESSION_GRACE_MS },
      ).then((outcome) => {
        outcomes[id] = outcome;
        inflight.delete(session);
      });
      inflight.add(session);
    };
    // Start sessions until enough writes were attempted (and, in a short run, every fault happened).
    let lastReport = Date.now();
    for (;;) {
      if (nemesis.error) throw new Error(`the nemesis could not inject a fault: ${nemesis.error.message}`);
      const faultsDone = !options.faults || !options.short || nemesis.coveredAllKinds;
      const enough = (await attempted()) >= options.writes && faultsDone;
      if (enough) break;
      while (inflight.size < options.concurrency) launch();
      await Promise.race([...inflight, delay(1_000)]);
      if (Date.now() - lastReport > 15_000) {
        say(
          `${await attempted()} writes attempted, ${seq} sessions started, ${nemesis.faults.length} faults`,
        );
        lastReport = Date.now();
      }
    }
    await nemesis.stop();
    say(`${seq} sessions started; waiting for the ${inflight.size} in flight to end`);
    const drained = await Promise.race([
      Promise.all(inflight).then(() => true),
      delay(DRAIN_MS).then(() => false),
    ]);
    if (!drained) say(`${inflight.size} sessions still without an outcome after ${DRAIN_MS / 1000} s`);
    const launched = Array.from({ length: seq }, (_, n) => `campaign/${tag}/${n}`);

    const writes = Object.fromEntries(
      await Promise.all(keys.map(async (k) => [k, await resources.attempts(k)] as const)),
    );
    const records = Object.fromEntries(
      await Promise.all(keys.map(async (k) => [k, await resources.records(k)] as const)),
    );
    const journal = readJournals(pool.journals);
    const report = checkCampaign({
      writes,
      records,
      journal: journal.entries,
      unreadableJournalLines: journal.unreadable,
      faults: nemesis.faults,
      sessions: outcomesOfAll(launched, outcomes),
      runsPerSessionId: await runsPerSessionId(client),
      // etcd's lease times are the worker's estimates (docs/lock-services.md): judge its leases by
      // its own order of revisions instead.
      serviceOrder: await serviceOrderOf(serviceOrder),
      workerCrashes: pool.crashes,
    });
    const elapsedS = Math.round((Date.now() - started) / 1000);
    const lines = [
      `${options.cluster ? `cluster (${options.backend === 'etcd' ? 'etcd, three members' : 'zookeeper, three servers'})` : `backend ${options.backend}${options.tls ? ' over TLS' : ''}`}, seed ${options.seed}, ${elapsedS} s`,
      `writes: ${report.writes.attempted} attempted, ${report.writes.accepted} accepted, ${report.writes.refusedAsStale} refused as stale` +
        ` (${report.writes.lateButFenced} accepted late but fenced, ${report.writes.afterDeadlinePaused} after their deadline by a paused holder,` +
        ` ${report.writes.afterDeadlineFencingOnly} after their deadline by a writer trusting fencing alone,` +
        ` ${report.writes.repeatsWithSameToken} further records under a token already written)`,
      `faults: ${Object.entries(report.faults)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
      `sessions: ${Object.entries(report.sessions)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
      `leases: ${report.leases.granted} granted and ${report.leases.renewals} renewals on ${report.leases.keys} keys, ${report.leases.restartsCrossed} key(s) across lock-server restarts, ${report.leases.grantsNotJournaled} written but not journaled, ${report.leases.renewalsAfterUnanswered} renewal(s) after one whose answer was lost, ${report.leases.grantsAfterUnansweredRelease} grant(s) after a release whose answer was lost`,
      `journal: ${report.journal.entries} entries, ${report.journal.unreadableLines} unreadable line(s)${journal.unreadable.length ? ` (${journal.unreadable.slice(0, 5).join(', ')})` : ''}; application records read back: ${report.records}`,
      `violations: ${VIOLATION_KINDS.map((k) => `${k} ${report.violations[k]}`).join(', ')}`,
    ];
    for (const line of lines) say(line);
    for (const [kind, examples] of Object.entries(report.examples))
      for (const example of examples) say(`  ${kind}: ${example}`);
    const total = Object.values(report.violations).reduce((a, b) => a + b, 0);
    const missing = options.faults && options.short && !nemesis.coveredAllKinds ? 1 : 0;
    say(
      total === 0 && !missing
        ? `PASS: 0 violations (replay with --seed ${options.seed})`
        : `FAIL: ${total} violation(s)`,
    );
    fs.writeFileSync(
      path.join(dirs.run, 'report.json'),
      JSON.stringify({ options, elapsedS, report, faults: nemesis.faults }, null, 2),
    );
    // The figure a post-mortem cites, as a JSON report (copy it to bench/results/ beside the output).
    const evidence = new EvidenceFile('fault-campaign', lines[0]!);
    const faultCount = Object.values(report.faults).reduce((a, b) => a + b, 0);
    evidence.figure(
      `fault campaign on ${where} (seed ${options.seed})`,
      `${total} violations (${report.writes.accepted} of ${report.writes.attempted} writes accepted, ` +
        `${report.writes.refusedAsStale} refused as stale, ${faultCount} faults, ${elapsedS} s)`,
    );
    evidence.write(path.join(dirs.run, 'evidence.json'));
    say(`evidence: ${path.relative(process.cwd(), path.join(dirs.run, 'evidence.json'))}`);
    return total + missing === 0 ? 0 : 1;
  } finally {
    await nemesis.stop();
    await pool.stopAll();
    await resources.close();
    await client.connection.close();
    await site.close();
  }
}

/**
 * Follows the lock service's own order of lease changes, for a service whose reported times are
 * estimates (etcd); null for the others.
 */
async function followServiceOrder(url: string): Promise<LeaseHistoryFollower | null> {
  const target = lockServiceUrlSchema.parse(url);
  return target.backend === 'etcd' ? followEtcdLeaseHistory(target) : null;
}

/** Every lease change the follower saw, once etcd has delivered them all. */
async function serviceOrderOf(follower: LeaseHistoryFollower | null) {
  if (!follower) return null;
  const history = await follower.end();
  say(`service order: ${history.length} lease-key changes read from etcd's history`);
  return history;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
