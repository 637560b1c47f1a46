// The lock servers the suites use: the plain ones, and the same over TLS with credentials.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The lock servers the tests' global setup starts (scripts/lock-servers.sh), by backend. */
export const SERVER_URLS = {
  redis: `redis://127.0.0.1:${process.env.LOCKWARDEN_REDIS_PORT ?? 16379}`,
  postgres: `postgres://lockwarden@127.0.0.1:${process.env.LOCKWARDEN_PG_PORT ?? 15432}/lockwarden`,
  etcd: `etcd://127.0.0.1:${process.env.LOCKWARDEN_ETCD_PORT ?? 12379}`,
  zookeeper: `zookeeper://127.0.0.1:${process.env.LOCKWARDEN_ZK_PORT ?? 12181}/lockwarden`,
};

/** Where the secure lock servers (LOCKWARDEN_TLS=1 scripts/lock-servers.sh) keep data, PKI and secrets. */
export const SECURE_SERVERS_DIR =
  process.env.LOCKWARDEN_SECURE_SERVERS_DIR ??
  (process.getuid?.() === 0
    ? '/var/lib/lockwarden/secure-servers'
    : path.join(os.homedir(), '.local', 'state', 'lockwarden', 'secure-servers'));

/** Their ports: apart from the plain servers', the suites' own and the campaigns'. */
export const SECURE_SERVER_PORTS = { redis: 16380, postgres: 15433, etcd: 12381 };

/** The environment that runs lock-servers.sh on the secure servers (or a campaign's, given its own). */
export function secureServersEnv(
  dir = SECURE_SERVERS_DIR,
  ports: { redis: number; postgres: number; etcd: number } = SECURE_SERVER_PORTS,
): Record<string, string> {
  return {
    LOCKWARDEN_TLS: '1',
    LOCKWARDEN_SERVERS_DIR: dir,
    LOCKWARDEN_REDIS_PORT: String(ports.redis),
    LOCKWARDEN_PG_PORT: String(ports.postgres),
    LOCKWARDEN_ETCD_PORT: String(ports.etcd),
  };
}

/** A user the secure servers know: lockwarden's, the admin (setup), or one allowed nothing of lockwarden's. */
export type SecureUser = 'lockwarden' | 'outsider' | 'admin';

/**
 * The URL of a secure server as production writes one: TLS verified against the test CA, a client
 * certificate where the server asks for one, and `user`'s password from the data directory (or `password`).
 */
export function secureServerUrl(
  backend: 'redis' | 'postgres' | 'etcd',
  options: { user?: SecureUser; password?: string; ca?: string; dir?: string; port?: number } = {},
): string {
  const dir = options.dir ?? SECURE_SERVERS_DIR;
  const user = options.user ?? 'lockwarden';
  const pki = path.join(dir, 'pki');
  const secretName = {
    redis: `redis-${user}`,
    postgres: `pg-${user}`,
    etcd: `etcd-${user === 'admin' ? 'root' : user}`,
  }[backend];
  const password = options.password ?? fs.readFileSync(path.join(dir, 'secrets', secretName), 'utf8').trim();
  const port = options.port ?? SECURE_SERVER_PORTS[backend];
  const ca = options.ca ?? path.join(pki, 'lockwarden-test-ca.pem');
  const client = `sslcert=${path.join(pki, 'lockwarden-client.pem')}&sslkey=${path.join(pki, 'lockwarden-client-key.pem')}`;
  const name = backend === 'etcd' && user === 'admin' ? 'root' : user;
  switch (backend) {
    case 'redis':
      return `rediss://${name}:${password}@127.0.0.1:${port}?sslrootcert=${ca}`;
    case 'postgres':
      return `postgres://${name}:${password}@127.0.0.1:${port}/lockwarden?sslmode=verify-full&sslrootcert=${ca}&${client}`;
    case 'etcd':
      return `etcds://${name}:${password}@127.0.0.1:${port}?sslrootcert=${ca}&${client}`;
  }
}
