// Where a fault campaign runs: on servers of its own on loopback (a Temporal dev server and one lock
// server, reached through links the nemesis can cut), or on scripts/cluster.sh's cluster (Temporal's
// services and a three-member etcd or its three-server ZooKeeper, workers on its lock-worker hosts).
import { clusterUp, CLUSTER, namespaceOf } from '../devkit/cluster';
import {
  assertCampaignPortsFree,
  type Backend,
  CAMPAIGN_PORTS,
  CampaignLockServer,
  CampaignTemporal,
  type CampaignDirs,
  startResourceServer,
} from './campaignServers';
import { FaultyLink } from './faultyLink';
import type { FaultTargets } from './nemesis';
import type { WorkerPool } from './workerPool';

/** The servers a campaign's driver, workers and nemesis use. */
export interface CampaignSite {
  /** Where the driver and the checker reach Temporal and the lock service (around any link). */
  temporalAddress: string;
  lockUrl: string;
  /** What the workers reach them (and the PostgreSQL fenced resource) by. */
  workerEnv: { TEMPORAL_ADDRESS: string; LOCK_SERVICE_URL: string; CAMPAIGN_POSTGRES_RESOURCE: string };
  /** The PostgreSQL fenced resource, as the driver reaches it. */
  postgresResource: string;
  /** The host (network namespace) worker `i` runs on, if not this one. */
  hostOf?(i: number): string;
  /** The nemesis's targets beyond the worker pool. */
  faults(pool: WorkerPool): Omit<FaultTargets, 'workers' | 'pauseWorker' | 'killWorker'>;
  /** Lets everything through again, then stops what the site started. */
  close(): Promise<void>;
}

/** A Temporal dev server and a lock server of the campaign's own, behind faulty links. */
export async function localSite(backend: Backend, dirs: CampaignDirs, tls = false): Promise<CampaignSite> {
  await assertCampaignPortsFree(backend);
  const temporal = new CampaignTemporal(dirs);
  const lockServer = new CampaignLockServer(backend, dirs, tls);
  const postgresResource = startResourceServer();
  temporal.start();
  lockServer.start();
  // The workers reach Temporal and the lock server through links the nemesis can cut, slow and
  // break; the driver, the checker and the servers' own restarts go around them.
  const temporalLink = new FaultyLink(
    { host: '127.0.0.1', port: CAMPAIGN_PORTS.temporal },
    CAMPAIGN_PORTS.temporalLink,
  );
  const endpoint = lockServer.endpoint;
  const lockLink = endpoint ? new FaultyLink(endpoint, CAMPAIGN_PORTS.lockLink) : null;
  await temporalLink.start();
  await lockLink?.start();
  return {
    temporalAddress: temporal.address,
    lockUrl: lockServer.url,
    postgresResource,
    workerEnv: {
      TEMPORAL_ADDRESS: temporalLink.address,
      LOCK_SERVICE_URL: lockServer.urlThrough(CAMPAIGN_PORTS.lockLink),
      CAMPAIGN_POSTGRES_RESOURCE: postgresResource,
    },
    faults: (pool) => ({
      async restartLockServer() {
        if (backend === 'sqlite') {
          await pool.killAll();
          return 'SIGKILL every worker holding the SQLite file open, three new ones started';
        }
        lockServer.crashAndRestart();
        return `${backend} crashed and restarted on its data`;
      },
      restartTemporal: async () => temporal.crashAndRestart(),
      links: { lock: lockLink, temporal: temporalLink },
    }),
    async close() {
      temporalLink.heal();
      lockLink?.heal();
      await temporalLink.close();
      await lockLink?.close();
      temporal.stop();
      lockServer.stop();
    },
  };
}

/**
 * The cluster scripts/cluster.sh runs (brought up if it is not): workers on its two lock-worker
 * hosts in turn, reaching Temporal's frontend and etcd's members over the bridge as hosts do. The
 * fenced PostgreSQL resource stays on this host's loopback, so a plain relay (never faulted) on the
 * bridge carries the workers to it.
 */
export async function clusterSite(lockService: 'etcd' | 'zookeeper'): Promise<CampaignSite> {
  clusterUp();
  const postgresResource = startResourceServer();
  const resourceUrl = new URL(postgresResource);
  const relay = new FaultyLink(
    { host: resourceUrl.hostname, port: Number(resourceUrl.port) },
    0,
    CLUSTER.bridgeAddress,
  );
  await relay.start();
  const relayed = new URL(postgresResource);
  relayed.hostname = CLUSTER.bridgeAddress;
  relayed.port = String(relay.port);
  const lockUrl = lockService === 'etcd' ? CLUSTER.lockServiceUrl : CLUSTER.zookeeperUrl;
  return {
    temporalAddress: CLUSTER.temporalAddress,
    lockUrl,
    postgresResource,
    workerEnv: {
      TEMPORAL_ADDRESS: CLUSTER.temporalAddress,
      LOCK_SERVICE_URL: lockUrl,
      CAMPAIGN_POSTGRES_RESOURCE: relayed.toString(),
    },
    hostOf: (i) => namespaceOf(CLUSTER.lockHosts[i % CLUSTER.lockHosts.length]!),
    faults: () => ({ links: { lock: null, temporal: null }, cluster: lockService }),
    close: () => relay.close(),
  };
}
