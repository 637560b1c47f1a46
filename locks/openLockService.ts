// Opens the lock service a URL names, checked on every call (checkedLockService.ts).
import path from 'node:path';
import { z } from 'zod';
import {
  type CorruptLockStateError,
  describeIssues,
  InvalidConfigurationError,
  LockServiceCredentialsRefusedError,
} from '../policy/errors';
import { tracedLockService } from './tracedLockService';
import { checkedLockService } from './checkedLockService';
import { credentialRefusal, credentialsChecked } from '../policy/lockContract/credentialRefusal';
import type { LockService, LockServiceLimits } from './lockService';
import { withDriver } from './optionalDrivers';
import { SqliteLockService } from './sqliteLockService';
import { type EtcdTarget, parseEtcdUrl, takeTlsFiles } from './lockServiceTls';
import { parseZookeeperUrl } from './zookeeperUrl';
import { probeTls } from '../temporal/tlsProbe';

/** The embedded default: a SQLite file beside the checkout's other local state. */
export const DEFAULT_LOCK_SERVICE_URL = `sqlite:${path.join('.data', 'locks.sqlite')}`;

const ACCEPTED =
  'sqlite:<path>, redis[s]://[user:password@]host:port, postgres://user[:password]@host:port/db[?sslmode=verify-full&...] ' +
  'etcd[s]://[user:password@]host:port[,host:port] or zookeeper://host:port[,host:port][/chroot]';

/** A lock service URL, parsed into the backend it names. */
export const lockServiceUrlSchema = z
  .string()
  .trim()
  .transform((url, ctx) => {
    const backend = parseBackend(url);
    if (backend && 'problem' in backend) ctx.addIssue({ code: 'custom', message: backend.problem });
    else if (!backend) ctx.addIssue({ code: 'custom', message: `must be one of ${ACCEPTED}` });
    return backend && !('problem' in backend) ? backend : z.NEVER;
  });

function parseBackend(url: string) {
  if (/^sqlite:.+/.test(url)) return { backend: 'sqlite' as const, path: url.slice('sqlite:'.length) };
  if (/^rediss?:\/\/[^\s]+$/.test(url)) return { backend: 'redis' as const, url };
  if (/^postgres(ql)?:\/\/[^\s]+$/.test(url)) return { backend: 'postgres' as const, url };
  if (/^etcds?:\/\//.test(url)) {
    const target = parseEtcdUrl(url);
    if (target) return { backend: 'etcd' as const, ...target };
  }
  if (/^zookeeper:\/\//.test(url)) {
    const target = parseZookeeperUrl(url);
    return 'problem' in target ? target : { backend: 'zookeeper' as const, ...target };
  }
  return undefined;
}

/**
 * Opens the lock service a URL names, every answer of it checked (checkedLockService: a record
 * lockwarden did not write is a CorruptLockState failure); throws InvalidConfiguration naming the
 * URL's problem, or LockServiceCredentialsRefused when the service refuses the credentials. Redlock (several independent Redis masters) is deliberately not offered: it issues
 * no fencing tokens and its safety rests on bounded clock drift and pauses, which is what lockwarden
 * exists not to assume.
 */
export async function openLockService(
  url: string,
  options: LockServiceLimits & { onCorrupt?: (error: CorruptLockStateError) => void } = {},
): Promise<LockService> {
  const { onCorrupt, ...backendOptions } = options;
  const locks = await credentialsChecked(() => openBackend(url, backendOptions));
  await refuseBadCredentials(locks);
  return tracedLockService(checkedLockService(locks, onCorrupt));
}

/**
 * The start-up check: one read of a key nobody holds. A refused credential or permission stops the
 * process that opens the service (LockServiceCredentialsRefused, naming the server's words and never
 * the URL); anything else (a server still starting, a partition) is left to the sessions, which
 * ride an outage out.
 */
async function refuseBadCredentials(locks: LockService): Promise<void> {
  try {
    await locks.inspect('lockwarden/start-up-check');
  } catch (error) {
    if (credentialRefusal(error) === null) return;
    await locks.close().catch(() => undefined);
    await credentialsChecked(() => Promise.reject(error));
  }
}

// The backend a URL names, unwrapped.
async function openBackend(url: string, options: LockServiceLimits): Promise<LockService> {
  const parsed = lockServiceUrlSchema.safeParse(url);
  if (!parsed.success) {
    throw new InvalidConfigurationError(
      describeIssues(parsed.error).map((p) => `LOCK_SERVICE_URL ${p.replace(/^\(input\): /, '')}`),
    );
  }
  const target = parsed.data;
  // The server backends' drivers are optional: each is loaded only when its URL is opened.
  const what = `LOCK_SERVICE_URL ${target.backend}://`;
  switch (target.backend) {
    case 'sqlite':
      return new SqliteLockService({ path: target.path, ...options });
    case 'redis': {
      const { RedisLockService } = await withDriver('redis', what, () => import('./redisLockService'));
      return RedisLockService.open({ url: target.url, ...options });
    }
    case 'postgres': {
      // The driver reads sslrootcert, sslcert and sslkey itself; a file it cannot read is named here first.
      takeTlsFiles(target.url);
      const { PostgresLockService } = await withDriver('pg', what, () => import('./postgresLockService'));
      return PostgresLockService.open({ connectionString: target.url, ...options });
    }
    case 'etcd': {
      await refuseUntrustedTls(target);
      const { EtcdLockService } = await withDriver('etcd3', what, () => import('./etcdLockService'));
      return new EtcdLockService({ hosts: target.hosts, auth: target.auth, files: target.files, ...options });
    }
    case 'zookeeper': {
      const { ZookeeperLockService } = await withDriver(
        'node-zookeeper-client',
        what,
        () => import('./zookeeperLockService'),
      );
      return new ZookeeperLockService({ connectString: target.connectString, root: target.root, ...options });
    }
  }
}

/**
 * etcd's gRPC client reports a refused TLS handshake (a server certificate from another CA, a client
 * certificate the server does not accept) only as "no connection established", which looks like an
 * outage: one handshake of our own tells them apart, so a wrong CA stops the worker at start.
 */
async function refuseUntrustedTls(target: EtcdTarget): Promise<void> {
  const first = target.hosts[0];
  if (!first?.startsWith('https://')) return;
  const { hostname, port } = new URL(first);
  const code = await probeTls(hostname, Number(port), target.files);
  if (code !== null && credentialRefusal({ code }) !== null)
    throw new LockServiceCredentialsRefusedError(`TLS handshake with ${hostname}:${port}: ${code}`);
}
