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
    const [user = '', password = ''] = rest.slice(0, userEnd).split(':');
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

/** The etcd3 client's options for a target: its hosts, its RBAC user, its CA and client certificate. */
export function etcdClientOptions(target: Pick<EtcdTarget, 'hosts'> & Partial<EtcdTarget>): IOptions {
  const { ca, cert, key } = target.files ?? {};
  return {
    hosts: target.hosts,
    dialTimeout: 3_000,
    ...(target.auth ? { auth: target.auth } : {}),
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
