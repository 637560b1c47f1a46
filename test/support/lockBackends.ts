import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LockService } from '../../locks/lockService';
import { openLockService } from '../../locks/openLockService';
import { SERVER_URLS, secureServerUrl } from '../../devkit/servers';
import { freshSqlitePath } from '../../devkit/tempFiles';

/** How the suites reach one backend on a real server, and how they restart that server. */
export interface BackendHarness {
  /** The backend, with "-tls" for the secure servers (TLS, a password, a client certificate). */
  name: string;
  backend: 'sqlite' | 'redis' | 'postgres' | 'etcd' | 'zookeeper';
  url: string;
  open(): Promise<LockService>;
}

const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'lock-servers.sh');

export { SERVER_URLS };

/**
 * Every backend, each on its real server; the conformance suite runs unchanged against each. With
 * `secure`, also the three server backends as production runs them (LOCKWARDEN_TLS=1 servers).
 */
export function backendHarnesses(options: { secure?: boolean } = {}): BackendHarness[] {
  const sqliteUrl = `sqlite:${freshSqlitePath()}`;
  const servers = ['redis', 'postgres', 'etcd'] as const;
  // ZooKeeper only plain: lockwarden's ZooKeeper client speaks no TLS (scripts/lock-servers.sh).
  const harness = (name: string, backend: BackendHarness['backend'], url: string): BackendHarness => ({
    name,
    backend,
    url,
    open: () => openLockService(url, { maxTtlMs: 60_000 }),
  });
  return [
    harness('sqlite', 'sqlite', sqliteUrl),
    ...servers.map((name) => harness(name, name, SERVER_URLS[name])),
    harness('zookeeper', 'zookeeper', SERVER_URLS.zookeeper),
    ...(options.secure ? servers.map((name) => harness(`${name}-tls`, name, secureServerUrl(name))) : []),
  ];
}

/** A server backend's process of a suite's own: its own ports and data, so restarting it disturbs nobody. */
export interface OwnServer {
  name: 'redis' | 'postgres' | 'etcd' | 'zookeeper';
  url: string;
  start(): void;
  /** Stops the server cleanly and starts it on the same data. */
  restart(): void;
  /** Kills the server as a crash would and starts it on the same data. */
  crash(): void;
  stop(): void;
}

/**
 * `name`'s server for one suite, on `port` (one no shared server, no other suite and no fault
 * campaign uses, since suites run in parallel; and below the ephemeral range, 32768-60999, where the
 * Temporal dev server picks the ports of its own services), under the suite's own data directory
 * (kept across runs: tokens must survive restarts).
 */
export function ownServer(
  name: OwnServer['name'],
  suite: string,
  port: number,
  options: { tls?: boolean } = {},
): OwnServer {
  const base =
    process.getuid?.() === 0
      ? '/var/lib/lockwarden'
      : path.join(os.homedir(), '.local', 'state', 'lockwarden');
  const dir = path.join(base, `own-${suite}`);
  const env = {
    ...process.env,
    ...(options.tls ? { LOCKWARDEN_TLS: '1' } : {}),
    LOCKWARDEN_SERVERS_DIR: dir,
    LOCKWARDEN_REDIS_PORT: String(port),
    LOCKWARDEN_PG_PORT: String(port),
    LOCKWARDEN_ETCD_PORT: String(port),
    LOCKWARDEN_ZK_PORT: String(port),
  };
  const script = (command: string) => {
    fs.mkdirSync(dir, { recursive: true });
    execFileSync('bash', [SCRIPT, command, name], { stdio: 'ignore', env });
  };
  const urls = {
    redis: `redis://127.0.0.1:${port}`,
    postgres: `postgres://lockwarden@127.0.0.1:${port}/lockwarden`,
    etcd: `etcd://127.0.0.1:${port}`,
    zookeeper: `zookeeper://127.0.0.1:${port}/lockwarden`,
  };
  return {
    name,
    // Over TLS, the URL holds the passwords the server's first start makes: read when asked.
    get url() {
      if (options.tls && name === 'zookeeper') throw new Error('no ZooKeeper over TLS');
      return options.tls && name !== 'zookeeper' ? secureServerUrl(name, { dir, port }) : urls[name];
    },
    start: () => script('start'),
    restart: () => script('restart'),
    crash: () => script('crash'),
    stop: () => script('stop'),
  };
}
