import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { LockService } from '../../locks/lockService';
import { openLockService } from '../../locks/openLockService';
import { freshSqlitePath } from './tempFiles';

/** How the suites reach one backend on a real server, and how they restart that server. */
export interface BackendHarness {
  name: 'sqlite' | 'redis' | 'postgres' | 'etcd';
  url: string;
  open(): Promise<LockService>;
  /** Restarts the server process, keeping its data (SQLite has none: reopening the file is its restart). */
  restartServer(): void;
}

const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'lock-servers.sh');
const restart = (server: string) => () => {
  execFileSync('bash', [SCRIPT, 'restart', server], { stdio: 'ignore' });
};

/** URLs of the servers scripts/lock-servers.sh starts. */
export const SERVER_URLS = {
  redis: `redis://127.0.0.1:${process.env.LOCKWARDEN_REDIS_PORT ?? 16379}`,
  postgres: `postgres://lockwarden@127.0.0.1:${process.env.LOCKWARDEN_PG_PORT ?? 15432}/lockwarden`,
  etcd: `etcd://127.0.0.1:${process.env.LOCKWARDEN_ETCD_PORT ?? 12379}`,
};

/** Every backend, each on its real server; the conformance suite runs unchanged against each. */
export function backendHarnesses(): BackendHarness[] {
  const sqliteUrl = `sqlite:${freshSqlitePath()}`;
  return [
    {
      name: 'sqlite',
      url: sqliteUrl,
      open: () => openLockService(sqliteUrl, { maxTtlMs: 60_000 }),
      restartServer: () => undefined,
    },
    ...(['redis', 'postgres', 'etcd'] as const).map((name) => ({
      name,
      url: SERVER_URLS[name],
      open: () => openLockService(SERVER_URLS[name], { maxTtlMs: 60_000 }),
      restartServer: restart(name),
    })),
  ];
}
