// Certificates the tests make with openssl: a CA, a server certificate for the loopback address, a
// client certificate from the same CA, and a stranger's CA and client certificate that nothing trusts.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** A certificate and its key, as PEM files. */
export interface CertificatePair {
  cert: string;
  key: string;
}

/** The files of a test PKI; each field is a path. */
export interface TestPki {
  dir: string;
  /** The CA every server and the trusted client certificate come from. */
  ca: CertificatePair;
  /** For 127.0.0.1 and localhost. */
  server: CertificatePair;
  /** A client certificate from `ca` (common name `lockwarden-client`). */
  client: CertificatePair;
  /** A CA nothing trusts, and a client certificate from it. */
  strangerCa: CertificatePair;
  strangerClient: CertificatePair;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): CertificatePair {
  const pair = { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}-key.pem`) };
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-sha256',
    '-days',
    '30',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    pair.key,
    '-out',
    pair.cert,
  ]);
  return pair;
}

function issue(dir: string, ca: CertificatePair, name: string, extensions: string): CertificatePair {
  const pair = { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}-key.pem`) };
  const csr = path.join(dir, `${name}.csr`);
  const ext = path.join(dir, `${name}.ext`);
  fs.writeFileSync(ext, extensions);
  openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-sha256',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    pair.key,
    '-out',
    csr,
  ]);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-days',
    '30',
    '-sha256',
    '-extfile',
    ext,
    '-out',
    pair.cert,
  ]);
  // Servers that drop privileges (PostgreSQL) read their key as another user; the directory is private.
  fs.chmodSync(pair.key, 0o600);
  return pair;
}

/**
 * Makes a test PKI in `dir` (created if missing), once: an existing complete one is reused. The server
 * certificate is for 127.0.0.1 and localhost, and for `serverNames` (compose's service names).
 */
export function makeTestPki(dir: string, serverNames: string[] = []): TestPki {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const done = path.join(dir, 'complete');
  const files = (name: string): CertificatePair => ({
    cert: path.join(dir, `${name}.pem`),
    key: path.join(dir, `${name}-key.pem`),
  });
  if (!fs.existsSync(done)) {
    const ca = makeCa(dir, 'lockwarden-test-ca');
    const names = ['IP:127.0.0.1', 'DNS:localhost', ...serverNames.map((n) => `DNS:${n}`)].join(',');
    issue(dir, ca, 'server', `subjectAltName=${names}\nextendedKeyUsage=serverAuth,clientAuth\n`);
    issue(dir, ca, 'lockwarden-client', 'extendedKeyUsage=clientAuth\n');
    const stranger = makeCa(dir, 'stranger-ca');
    issue(dir, stranger, 'stranger-client', 'extendedKeyUsage=clientAuth\n');
    fs.writeFileSync(done, '');
  }
  return {
    dir,
    ca: files('lockwarden-test-ca'),
    server: files('server'),
    client: files('lockwarden-client'),
    strangerCa: files('stranger-ca'),
    strangerClient: files('stranger-client'),
  };
}
// `node --import tsx devkit/certificates.ts <dir> [server name ...]`: the scripts' way to make one.
if (require.main === module) console.log(makeTestPki(process.argv[2] ?? '', process.argv.slice(3)).dir);
