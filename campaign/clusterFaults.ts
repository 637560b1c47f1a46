// The faults a cluster meets (scripts/cluster.sh), for the campaign's nemesis: the etcd leader
// killed, an etcd member cut off, the links between etcd members throttled (or, on its ZooKeeper,
// the leader killed and a server cut off), a history service killed, the frontend restarted, a
// lock-worker host cut off from everything.
import { setTimeout as delay } from 'node:timers/promises';
import {
  awaitEtcdLeader,
  awaitZkLeader,
  CLUSTER,
  cutHost,
  type EtcdMember,
  healHost,
  killProcess,
  slowEtcdPeers,
  startProcess,
  unslowEtcdPeers,
  type ZkMember,
} from '../devkit/cluster';

import type { ClusterFaultKind } from './checker';

/** How long a fault lasts, drawn by the nemesis from its seeded schedule. */
export interface ClusterFaultTiming {
  /** A member or host cut off, or a process down before it is started again. */
  outageMs: number;
  /** The peer links throttled. */
  slowForMs: number;
  /** Picks one of `n` (seeded). */
  pick(n: number): number;
}

/** What the nemesis records of a cluster fault: what was done, and whom it hit. */
export interface ClusterFaultPlan {
  detail: string;
  /** Injects the fault and undoes it when it is over; resolves once the cluster is whole again. */
  run(): Promise<void>;
}

const ETCD_MEMBERS = Object.keys(CLUSTER.etcdMembers) as EtcdMember[];
const ZK_MEMBERS = Object.keys(CLUSTER.zkMembers) as ZkMember[];
/** Peer links this slow make Raft's appends queue (there is no netem here to add a fixed delay). */
const SLOW_PEER_KBIT = 64;

/** The plan of one cluster fault of `kind`, its target chosen now (the leader: asked of etcd). */
export async function planClusterFault(
  kind: ClusterFaultKind,
  timing: ClusterFaultTiming,
): Promise<ClusterFaultPlan> {
  const { outageMs, slowForMs } = timing;
  switch (kind) {
    case 'etcd-leader-kill': {
      const leader = await awaitEtcdLeader();
      return {
        detail: `SIGKILL etcd's leader ${leader}, restart it on its data after ${outageMs} ms`,
        run: () => downFor(leader, outageMs),
      };
    }
    case 'etcd-partition': {
      const member = ETCD_MEMBERS[timing.pick(ETCD_MEMBERS.length)]!;
      return {
        detail: `cut ${member} off from the other members and the workers for ${outageMs} ms`,
        run: () => cutFor(member, outageMs),
      };
    }
    case 'etcd-slow':
      return {
        detail: `throttle the links between etcd members to ${SLOW_PEER_KBIT} kbit/s for ${slowForMs} ms`,
        async run() {
          slowEtcdPeers(SLOW_PEER_KBIT);
          await delay(slowForMs);
          unslowEtcdPeers();
        },
      };
    case 'zk-leader-kill': {
      const leader = await awaitZkLeader();
      return {
        detail: `SIGKILL ZooKeeper's leader ${leader}, restart it on its data after ${outageMs} ms`,
        run: () => downFor(leader, outageMs),
      };
    }
    case 'zk-partition': {
      const member = ZK_MEMBERS[timing.pick(ZK_MEMBERS.length)]!;
      return {
        detail: `cut ZooKeeper's ${member} off from the other servers and the workers for ${outageMs} ms`,
        run: () => cutFor(member, outageMs),
      };
    }
    case 'history-kill': {
      const history = (['history-1', 'history-2'] as const)[timing.pick(2)]!;
      return {
        detail: `SIGKILL Temporal's ${history} (its shards move to the other), restart it after ${outageMs} ms`,
        run: () => downFor(history, outageMs),
      };
    }
    case 'frontend-restart':
      return {
        detail: "SIGKILL Temporal's frontend and start it again at once",
        run: () => downFor('frontend', 0),
      };
    case 'host-cut': {
      const host = CLUSTER.lockHosts[timing.pick(CLUSTER.lockHosts.length)]!;
      return {
        detail: `cut lock-worker host ${host} off from everything for ${outageMs} ms`,
        run: () => cutFor(host, outageMs),
      };
    }
  }
}

async function downFor(name: Parameters<typeof killProcess>[0], ms: number): Promise<void> {
  killProcess(name);
  await delay(ms);
  startProcess(name);
}

async function cutFor(host: Parameters<typeof cutHost>[0], ms: number): Promise<void> {
  cutHost(host);
  try {
    await delay(ms);
  } finally {
    healHost(host);
  }
}
