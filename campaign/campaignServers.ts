// The servers a campaign runs on: its own Temporal dev server and its own lock server, on ports and
// data directories of their own, so a campaign's restarts never touch the servers the test suites
// use. The fenced PostgreSQL resource lives on the suites' server (scripts/lock-servers.sh), which
// the campaign never restarts.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { secureServerUrl } from '../devkit/servers';

const ROOT = path.join(__dirname, '..');
const SCRIPTS = path.join(ROOT, 'scripts');

export const CAMPAIGN_PORTS = {
  temporal: 17233,
  temporalUi: 18233,
  redis: 26379,
  postgres: 25432,
  etcd: 22379,
  zookeeper: 22181,
  /** The campaign's faulty links (faultyLink.ts) the workers reach Temporal and the lock server by. */
  temporalLink: 17243,
  lockLink: 27400,
};

export type Backend = 'sqlite' | 'redis' | 'postgres' | 'etcd' | 'zookeeper';

/** Where one campaign run keeps its state. */
export interface CampaignDirs {
  run: string;
  temporal: string;
  /** The lock server's data: where PostgreSQL's own user can reach it when we are root. */
  servers: string;
}

export function campaignDirs(tag: string): CampaignDirs {
  const run = path.join(ROOT, '.data', 'campaign', tag);
  const stateRoot =
    process.getuid?.() === 0
      ? '/var/lib/lockwarden/campaign'
      : path.join(
          process.env.XDG_STATE_HOME ?? path.join(os.homedir(), '.local', 'state'),
          'lockwarden',
          'campaign',
        );
  const dirs = { run, temporal: path.join(run, 'temporal'), servers: path.join(stateRoot, tag) };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  return dirs;
}

const sh = (script: string, args: string[], env: Record<string, string> = {}) =>
  execFileSync('bash', [path.join(SCRIPTS, script), ...args], {
    stdio: 'pipe',
    env: { ...process.env, ...env },
  });

/** The campaign's Temporal dev server: started, crashed (SIGKILL) and started again on its database. */
export class CampaignTemporal {
  readonly address = `127.0.0.1:${CAMPAIGN_PORTS.temporal}`;
  constructor(private readonly dirs: CampaignDirs) {}

  private get env() {
    return {
      LOCKWARDEN_DATA_DIR: this.dirs.temporal,
      TEMPORAL_PORT: String(CAMPAIGN_PORTS.temporal),
      TEMPORAL_UI_PORT: String(CAMPAIGN_PORTS.temporalUi),
    };
  }

  start(): void {
    sh('temporal-server.sh', ['start'], this.env);
  }

  /** Kills the server as a crash would, then starts it on the same database file. */
  crashAndRestart(): void {
    const pidFile = path.join(this.dirs.temporal, 'temporal.pid');
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
    for (let i = 0; i < 100 && alive(pid); i++) execFileSync('sleep', ['0.1']);
    fs.rmSync(pidFile, { force: true });
    this.start();
  }

  stop(): void {
    sh('temporal-server.sh', ['stop'], this.env);
  }
}

/** The campaign's lock server (none for SQLite: its "server" is the processes that hold the file). */
export class CampaignLockServer {
  constructor(
    readonly backend: Backend,
    private readonly dirs: CampaignDirs,
    /** Run the server over TLS with credentials (LOCKWARDEN_TLS=1), and reach it so. */
    readonly tls = false,
  ) {}

  private get env() {
    return {
      ...(this.tls ? { LOCKWARDEN_TLS: '1' } : {}),
      LOCKWARDEN_SERVERS_DIR: this.dirs.servers,
      LOCKWARDEN_REDIS_PORT: String(CAMPAIGN_PORTS.redis),
      LOCKWARDEN_PG_PORT: String(CAMPAIGN_PORTS.postgres),
      LOCKWARDEN_ETCD_PORT: String(CAMPAIGN_PORTS.etcd),
      LOCKWARDEN_ZK_PORT: String(CAMPAIGN_PORTS.zookeeper),
    };
  }

  get url(): string {
    if (this.tls && this.backend !== 'sqlite' && this.backend !== 'zookeeper')
      return secureServerUrl(this.backend, { dir: this.dirs.servers, port: CAMPAIGN_PORTS[this.backend] });
    switch (this.backend) {
      case 'sqlite':
        return `sqlite:${path.join(this.dirs.run, 'locks.sqlite')}`;
      case 'redis':
        return `redis://127.0.0.1:${CAMPAIGN_PORTS.redis}`;
      case 'postgres':
        return `postgres://lockwarden@127.0.0.1:${CAMPAIGN_PORTS.postgres}/lockwarden`;
      case 'etcd':
        return `etcd://127.0.0.1:${CAMPAIGN_PORTS.etcd}`;
      case 'zookeeper':
        return `zookeeper://127.0.0.1:${CAMPAIGN_PORTS.zookeeper}/lockwarden`;
    }
  }

  /** The server's address, for a link in front of it; null for SQLite, which has none. */
  get endpoint(): { host: string; port: number } | null {
    return this.backend === 'sqlite' ? null : { host: '127.0.0.1', port: CAMPAIGN_PORTS[this.backend] };
  }

  /** The URL the workers use: the same server, reached through the link on `port`. */
  urlThrough(port: number): string {
    if (this.backend === 'sqlite') return this.url;
    return this.url.replace(`:${CAMPAIGN_PORTS[this.backend]}`, `:${port}`);
  }

  start(): void {
    if (this.backend !== 'sqlite') sh('lock-servers.sh', ['start', this.backend], this.env);
  }

  /** Crashes the server (SIGKILL; PostgreSQL's immediate stop) and starts it on its data. */
  crashAndRestart(): void {
    sh('lock-servers.sh', ['crash', this.backend], this.env);
  }

  stop(): void {
    if (this.backend !== 'sqlite') sh('lock-servers.sh', ['stop', this.backend], this.env);
  }
}

/**
 * Refuses to run beside a server already on one of the campaign's ports: a campaign crashes and
 * restarts its servers, so it must own them (another campaign's leftovers would be restarted blind).
 */
export async function assertCampaignPortsFree(backend: Backend): Promise<void> {
  const ports = [CAMPAIGN_PORTS.temporal, CAMPAIGN_PORTS.temporalUi, CAMPAIGN_PORTS.temporalLink];
  if (backend !== 'sqlite') ports.push(CAMPAIGN_PORTS[backend], CAMPAIGN_PORTS.lockLink);
  for (const port of ports)
    if (await listening(port))
      throw new Error(
        `port ${port} is taken: a campaign starts its own servers there; stop whatever listens on it first`,
      );
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The suites' own PostgreSQL, which holds the campaign's PostgreSQL fenced resource. */
export function startResourceServer(): string {
  sh('lock-servers.sh', ['start', 'postgres']);
  return `postgres://lockwarden@127.0.0.1:${process.env.LOCKWARDEN_PG_PORT ?? 15432}/lockwarden`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
