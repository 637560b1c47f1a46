// The cluster scripts/cluster.sh runs on this machine, as the tests, the fault campaign and the
// benches drive it: its addresses, bringing it up, and the faults a cluster meets.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';

const SCRIPT = path.join(__dirname, '..', 'scripts', 'cluster.sh');

/** Where the cluster's parts listen (scripts/cluster.sh keeps the same table). */
export const CLUSTER = {
  temporalAddress: '10.88.0.2:7233',
  /** This host's address on the cluster's bridge: what the hosts reach it by. */
  bridgeAddress: '10.88.0.1',
  /** Temporal's PostgreSQL, on this host's loopback. */
  postgresPort: 15532,
  /** Where the script keeps pids, logs and data. */
  stateDir: process.env.LOCKWARDEN_CLUSTER_DIR ?? '/var/lib/lockwarden/cluster',
  etcdMembers: { 'etcd-1': '10.88.0.11', 'etcd-2': '10.88.0.12', 'etcd-3': '10.88.0.13' },
  lockServiceUrl: 'etcd://10.88.0.11:2379,10.88.0.12:2379,10.88.0.13:2379',
  /** The ZooKeeper ensemble, one server per host, for the campaign on it (the lock workers use etcd). */
  zkMembers: { 'zk-1': '10.88.0.14', 'zk-2': '10.88.0.15', 'zk-3': '10.88.0.16' },
  zookeeperUrl: 'zookeeper://10.88.0.14:2181,10.88.0.15:2181,10.88.0.16:2181/lockwarden',
  /** The lock workers' hosts (network namespaces) and the task queue their workers poll. */
  lockHosts: ['lock-1', 'lock-2'] as const,
  taskQueue: 'lockwarden',
  /** Every Temporal service process; history runs on two hosts so its shards can move. */
  temporalServices: ['frontend', 'history-1', 'history-2', 'matching', 'worker'] as const,
} as const;

export type EtcdMember = keyof typeof CLUSTER.etcdMembers;
export type ZkMember = keyof typeof CLUSTER.zkMembers;
export type LockHost = (typeof CLUSTER.lockHosts)[number];
/** A process of the cluster that a fault can kill and start again. */
export type ClusterProcess =
  EtcdMember | ZkMember | LockHost | (typeof CLUSTER.temporalServices)[number] | 'model';

function cluster(...args: string[]): string {
  return execFileSync('bash', [SCRIPT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Brings the cluster up (idempotent; its workers run this checkout's code). */
export function clusterUp(): void {
  execFileSync('bash', [SCRIPT, 'up'], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** The network namespace a host of the cluster runs in. */
export const namespaceOf = (host: EtcdMember | ZkMember | LockHost | 'model') => `lwc-${host}`;

/** SIGKILL, as a crash: the process is gone with whatever it had not written. */
export const killProcess = (name: ClusterProcess) => cluster('fault', 'kill', name);
/** Starts a killed process again on its data (an etcd member waits until it answers). */
export const startProcess = (name: ClusterProcess) => cluster('fault', 'start', name);
/** Drops every packet in or out of a host: its connections hang, as when a cable is pulled. */
export const cutHost = (host: EtcdMember | ZkMember | LockHost) => cluster('fault', 'cut', host);
export const healHost = (host: EtcdMember | ZkMember | LockHost) => cluster('fault', 'heal', host);
/** Throttles the links between etcd members to `kbit` (peer traffic only), or lifts it. */
export const slowEtcdPeers = (kbit: number) => cluster('fault', 'slow', String(kbit));
export const unslowEtcdPeers = () => cluster('fault', 'unslow');

/** The events of one kind the lock workers logged (their JSON log lines under the state directory). */
export function lockWorkerLogEvents(event: string): Record<string, unknown>[] {
  return CLUSTER.lockHosts.flatMap((host) => {
    const file = path.join(CLUSTER.stateDir, 'logs', `${host}.log`);
    if (!fs.existsSync(file)) return [];
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('{') && line.includes(`"event":"${event}"`))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  });
}

/** The member etcd's Raft says leads now, or null while there is none (an election). */
export async function etcdLeader(): Promise<EtcdMember | null> {
  for (const [member, ip] of Object.entries(CLUSTER.etcdMembers)) {
    try {
      const response = await fetch(`http://${ip}:2379/v3/maintenance/status`, {
        method: 'POST',
        body: '{}',
        signal: AbortSignal.timeout(1_000),
      });
      const status = (await response.json()) as { header?: { member_id?: string }; leader?: string };
      if (status.leader && status.header?.member_id === status.leader) return member as EtcdMember;
    } catch {
      // this member does not answer: ask the next
    }
  }
  return null;
}

/** Waits until some etcd member leads other than `not` (null: any); returns it. */
export const awaitEtcdLeader = (not: EtcdMember | null = null, timeoutMs = 30_000) =>
  awaitLeader('etcd', etcdLeader, not, timeoutMs);

// Waits until `leader()` names a member other than `not` (null: any), asking every 200 ms.
async function awaitLeader<M extends string>(
  what: string,
  leader: () => Promise<M | null>,
  not: M | null,
  timeoutMs: number,
): Promise<M> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await leader();
    if (now && now !== not) return now;
    if (Date.now() > deadline)
      throw new Error(`no ${what} leader${not ? ` other than ${not}` : ''} after ${timeoutMs} ms`);
    await delay(200);
  }
}

/** The ZooKeeper server that leads now (its `srvr` answer says "Mode: leader"), or null in an election. */
export async function zkLeader(): Promise<ZkMember | null> {
  const modes = await Promise.all(
    Object.entries(CLUSTER.zkMembers).map(async ([member, ip]) => {
      const answer = await fourLetterWord(ip, 2181, 'srvr').catch(() => '');
      return /^Mode: leader$/m.test(answer) ? (member as ZkMember) : null;
    }),
  );
  return modes.find((m) => m !== null) ?? null;
}

/** Waits until some ZooKeeper server leads other than `not` (null: any); returns it. */
export const awaitZkLeader = (not: ZkMember | null = null, timeoutMs = 30_000) =>
  awaitLeader('ZooKeeper', zkLeader, not, timeoutMs);

// One of ZooKeeper's four-letter words: the server answers and closes the connection.
function fourLetterWord(host: string, port: number, word: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let answer = '';
    socket.setTimeout(1_000, () => socket.destroy(new Error(`${host}:${port} did not answer ${word}`)));
    socket.on('connect', () => socket.write(word));
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

/**
 * The lock-worker host whose worker completed a workflow's latest workflow task: the worker's
 * identity is `pid@hostname`, and the process's network namespace says which host it runs on.
 */
export async function hostRunning(client: Client, workflowId: string): Promise<LockHost> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const identity = (history.events ?? [])
    .map((e) => e.workflowTaskCompletedEventAttributes?.identity)
    .filter((id): id is string => !!id)
    .at(-1);
  const pid = identity?.split('@')[0];
  if (!pid || !/^\d+$/.test(pid)) throw new Error(`no worker identity with a pid in ${workflowId}'s history`);
  const netns = execFileSync('ip', ['netns', 'identify', pid], { encoding: 'utf8' }).trim();
  const host = CLUSTER.lockHosts.find((h) => namespaceOf(h) === netns);
  if (!host) throw new Error(`worker ${identity} runs in namespace "${netns}", not on a lock-worker host`);
  return host;
}
