// TLS and credentials in a lock service URL: the CA, client certificate and key named by the same
// query parameters PostgreSQL's URLs use (sslrootcert, sslcert, sslkey), read once at start.
import fs from 'node:fs';
import type { IOptions } from 'etcd3';
import { InvalidConfigurationError } from '../policy/errors';

/** The TLS files a URL names, read; each absent when the URL names none. */
export interface TlsFiles {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/** The parameters that name files, as PostgreSQL's libpq names them. */
const FILE_PARAMETERS = { sslrootcert: 'ca', sslcert: 'cert', sslkey: 'key' } as const;

/**
 * Splits the TLS file parameters off a URL's query: the URL without them, and the files read.
 * An unreadable file throws InvalidConfiguration naming the parameter and its path (never the URL,
 * which may hold a password).
 */
export function takeTlsFiles(url: string): { url: string; files: TlsFiles } {
  const at = url.indexOf('?');
  if (at < 0) return { url, files: {} };
  const params = new URLSearchParams(url.slice(at + 1));
  const files: TlsFiles = {};
  for (const [parameter, field] of Object.entries(FILE_PARAMETERS)) {
    const file = params.get(parameter);
    if (file === null) continue;
    params.delete(parameter);
    try {
      files[field] = fs.readFileSync(file);
    } catch (error) {
      throw new InvalidConfigurationError([
        `LOCK_SERVICE_URL ${parameter}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      ]);
    }
  }
  if ((files.cert === undefined) !== (files.key === undefined))
    throw new InvalidConfigurationError([
      'LOCK_SERVICE_URL sslcert and sslkey: a client certificate needs both',
    ]);
  const rest = params.toString();
  return { url: url.slice(0, at) + (rest ? `?${rest}` : ''), files };
}

/** An etcd URL's parts: `etcd[s]://[user:password@]host:port[,host:port...][?sslrootcert=...]`. */
export interface EtcdTarget {
  hosts: string[];
  auth?: { username: string; password: string };
  files: TlsFiles;
}

const HOST_PORT = /^[A-Za-z0-9.-]+:\d{1,5}$/;

/** Parses an etcd URL (etcds:// is TLS), or null when it is not one. */
export function parseEtcdUrl(url: string): EtcdTarget | null {
  const scheme = /^etcd(s?):\/\//.exec(url);
  if (!scheme) return null;
  const secure = scheme[1] === 's';
  if (!secure && /[?&]ssl(rootcert|cert|key)=/.test(url))
    throw new InvalidConfigurationError(['LOCK_SERVICE_URL: sslrootcert, sslcert and sslkey need etcds://']);
  const { url: bare, files } = takeTlsFiles(url);
  let rest = bare.slice(scheme[0].length);
  let auth: EtcdTarget['auth'];
  const userEnd = rest.lastIndexOf('@');
  if (userEnd >= 0) {
    // The user ends at the first colon; the password is the rest, colons and all.
    const info = rest.slice(0, userEnd);
    const colon = info.indexOf(':');
    const [user, password] = colon < 0 ? [info, ''] : [info.slice(0, colon), info.slice(colon + 1)];
    auth = { username: decodeURIComponent(user), password: decodeURIComponent(password) };
    rest = rest.slice(userEnd + 1);
    if (!auth.username || !auth.password) return null;
  }
  const hosts = rest.replace(/\/$/, '').split(',');
  if (!hosts.length || !hosts.every((h) => HOST_PORT.test(h))) return null;
  return {
    hosts: hosts.map((h) => `${secure ? 'https' : 'http'}://${h}`),
    ...(auth ? { auth } : {}),
    files,
  };
}

/**
 * The longest one unary etcd call (or one-answer stream, such as a single keep-alive) may take: a
 * paged read of 1,000 keys takes milliseconds.
 */
export const ETCD_CALL_DEADLINE_MS = 15_000;

/**
 * etcd3's default per-host policy is a circuit breaker, and with an RBAC user it deadlocks: a call
 * refused for an expired token (every token, after etcd restarts) is retried from inside the
 * breaker's execution, and in the half-open state the retry waits for the trial call it is part of
 * (cockatiel's HalfOpen awaits its test). Every later call then waits forever: the fault campaign
 * over TLS saw workers stuck after an etcd crash. With a user, the hosts run their calls straight
 * through; the client's global retry and the calls' deadlines remain.
 */
const PASS_THROUGH = {
  // async: etcd3 marks a host failed by executing a function that throws, and expects a rejection.
  execute: async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T) =>
    fn({ signal: new AbortController().signal }),
} as unknown as NonNullable<NonNullable<IOptions['faultHandling']>['global']>;

/** The etcd3 client's options for a target: its hosts, its RBAC user, its CA and client certificate. */
export function etcdClientOptions(target: Pick<EtcdTarget, 'hosts'> & Partial<EtcdTarget>): IOptions {
  const { ca, cert, key } = target.files ?? {};
  return {
    hosts: target.hosts,
    dialTimeout: 3_000,
    // A unary call without a deadline can wait forever on a connection that went silent (a
    // partition that hangs connections, as the fault campaign's links do), and with an RBAC user
    // that includes the token exchange, which every later call awaits.
    defaultCallOptions: (call) => (call.isStream ? {} : { deadline: Date.now() + ETCD_CALL_DEADLINE_MS }),
    ...(target.auth ? { auth: target.auth, faultHandling: { host: () => PASS_THROUGH } } : {}),
    // grpc's createSsl takes a null CA as "the system's": a client certificate alone is allowed.
    ...(ca || cert
      ? {
          credentials: {
            rootCertificate: ca ?? (null as unknown as Buffer),
            privateKey: key,
            certChain: cert,
          },
        }
      : {}),
  };
}
