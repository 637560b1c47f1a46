// Temporal's real server (the cluster's build) with mTLS on its frontend and its JWT authorizer
// (Temporal's default claim mapper and authorizer), keys published by a JWKS this process serves.
// For the tests of how lockwarden connects in production: one process, SQLite in memory.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { msToTs } from '@temporalio/common/lib/time';
import { makeTestPki, type TestPki } from './certificates';

const root = path.join(__dirname, '..');
/** Ports of the secure server's services on 127.0.0.1 (apart from the dev server's and the cluster's). */
const PORTS = { frontend: 17433, internalFrontend: 17436, history: 17434, matching: 17435, worker: 17439 };
export const SECURE_TEMPORAL_ADDRESS = `127.0.0.1:${PORTS.frontend}`;

/** A key pair that signs the test's API keys (JWTs), and the JWKS that publishes its public half. */
export class JwtIssuer {
  private readonly privateKey: KeyObject;
  readonly kid: string;
  readonly jwks: object;

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.privateKey = privateKey;
    const jwk = publicKey.export({ format: 'jwk' });
    this.kid = createHash('sha256').update(JSON.stringify(jwk)).digest('hex').slice(0, 16);
    this.jwks = { keys: [{ ...jwk, kid: this.kid, alg: 'RS256', use: 'sig' }] };
  }

  /** An API key granting `permissions` (Temporal's form: "namespace:role", e.g. "default:write"). */
  token(subject: string, permissions: string[], lifetimeSeconds = 3600): string {
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const unsigned = `${encode({ alg: 'RS256', typ: 'JWT', kid: this.kid })}.${encode({
      sub: subject,
      permissions,
      iat: now,
      exp: now + lifetimeSeconds,
    })}`;
    return `${unsigned}.${sign('sha256', Buffer.from(unsigned), this.privateKey).toString('base64url')}`;
  }
}

/** A running secure server: its PKI, its key issuer, and an admin key (temporal-system:admin). */
export interface SecureTemporal {
  address: string;
  pki: TestPki;
  issuer: JwtIssuer;
  adminKey: string;
  logFile: string;
  stop(): Promise<void>;
}

function serverBinary(): string {
  execFileSync('bash', [path.join(root, 'scripts/cluster.sh'), 'build'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const version = fs
    .readFileSync(path.join(root, 'scripts/cluster.sh'), 'utf8')
    .match(/TEMPORAL_SERVER_VERSION=["']?([\d.]+)/)?.[1];
  const bin = process.env.LOCKWARDEN_TOOLS_BIN ?? path.join(os.homedir(), '.cache/lockwarden/bin');
  return path.join(bin, `temporal-server-v${version}`, 'server');
}

function configYaml(pki: TestPki, jwksUrl: string): string {
  const sqlite = (name: string) => `
    ${name}:
      sql:
        pluginName: sqlite
        databaseName: ${name}
        connectAddr: localhost
        connectProtocol: tcp
        connectAttributes: { mode: memory, cache: private }
        maxConns: 1
        maxIdleConns: 1
        maxConnLifetime: 1h`;
  const service = (port: number, offset: number) =>
    `{ rpc: { grpcPort: ${port}, membershipPort: ${port - 10500 + offset}, bindOnIP: 127.0.0.1 } }`;
  return `log: { stdout: true, level: warn }
persistence:
  numHistoryShards: 1
  defaultStore: default
  visibilityStore: visibility
  datastores:${sqlite('default')}${sqlite('visibility')}
global:
  membership: { maxJoinDuration: 30s, broadcastAddress: 127.0.0.1 }
  pprof: { port: 0 }
  tls:
    frontend:
      server:
        certFile: ${pki.server.cert}
        keyFile: ${pki.server.key}
        requireClientAuth: true
        clientCaFiles: [${pki.ca.cert}]
      client: { serverName: localhost, rootCaFiles: [${pki.ca.cert}] }
  authorization:
    jwtKeyProvider: { keySourceURIs: [${jwksUrl}], refreshInterval: 1m }
    permissionsClaimName: permissions
    authorizer: default
    claimMapper: default
services:
  frontend: ${service(PORTS.frontend, 0)}
  internal-frontend: ${service(PORTS.internalFrontend, 0)}
  history: ${service(PORTS.history, 0)}
  matching: ${service(PORTS.matching, 0)}
  worker: ${service(PORTS.worker, 0)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active: { enabled: true, initialFailoverVersion: 1, rpcName: frontend, rpcAddress: "${SECURE_TEMPORAL_ADDRESS}" }
dcRedirectionPolicy: { policy: noop }
dynamicConfigClient:
  filepath: ${path.join(root, 'compose/temporal-dynamic-config.yaml')}
  pollInterval: 10s
`;
}

/** Starts the secure server in `dir`; resolves once the `default` namespace and lockwarden's search attributes are in. */
export async function startSecureTemporal(dir: string): Promise<SecureTemporal> {
  fs.mkdirSync(path.join(dir, 'config'), { recursive: true });
  const pki = makeTestPki(path.join(dir, 'pki'));
  const issuer = new JwtIssuer();
  const jwksServer = http.createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(issuer.jwks));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as { port: number }).port}/jwks.json`;
  fs.writeFileSync(path.join(dir, 'config', 'secure.yaml'), configYaml(pki, jwksUrl));
  const logFile = path.join(dir, 'temporal.log');
  const log = fs.openSync(logFile, 'a');
  const server: ChildProcess = spawn(
    serverBinary(),
    [
      '--root',
      '/',
      '--config',
      path.join(dir, 'config'),
      '--env',
      'secure',
      'start',
      ...['frontend', 'internal-frontend', 'history', 'matching', 'worker'].flatMap((s) => ['--service', s]),
    ],
    { stdio: ['ignore', log, log], detached: false },
  );
  // The server outlives nothing: a test process that dies takes it along.
  const killOnExit = () => server.kill('SIGKILL');
  process.once('exit', killOnExit);
  const adminKey = issuer.token('lockwarden-test-admin', ['temporal-system:admin', 'default:admin']);
  const stop = async () => {
    process.off('exit', killOnExit);
    server.kill('SIGTERM');
    await new Promise((resolve) => (server.exitCode !== null ? resolve(null) : server.once('exit', resolve)));
    jwksServer.close();
    fs.closeSync(log);
  };
  try {
    await registerDefaultNamespace(pki, adminKey, server, logFile);
  } catch (error) {
    await stop();
    throw error;
  }
  return { address: SECURE_TEMPORAL_ADDRESS, pki, issuer, adminKey, logFile, stop };
}

/** The TLS settings of a trusted client (mTLS with the test CA's client certificate). */
export function trustedTls(pki: TestPki) {
  return {
    serverNameOverride: 'localhost',
    serverRootCACertificate: fs.readFileSync(pki.ca.cert),
    clientCertPair: { crt: fs.readFileSync(pki.client.cert), key: fs.readFileSync(pki.client.key) },
  };
}

async function registerDefaultNamespace(
  pki: TestPki,
  adminKey: string,
  server: ChildProcess,
  logFile: string,
) {
  const deadline = Date.now() + 90_000;
  let connection: Connection | null = null;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`the secure Temporal server exited: see ${logFile}`);
    try {
      connection ??= await Connection.connect({
        address: SECURE_TEMPORAL_ADDRESS,
        tls: trustedTls(pki),
        apiKey: adminKey,
      });
      await connection.workflowService
        .registerNamespace({
          namespace: 'default',
          workflowExecutionRetentionPeriod: msToTs('24h'),
        })
        .catch((error: { code?: number }) => {
          if (error.code !== 6) throw error; // ALREADY_EXISTS
        });
      const searchAttributes = Object.fromEntries(
        fs
          .readFileSync(path.join(root, 'scripts/search-attributes.txt'), 'utf8')
          .split('\n')
          .filter((line) => line && !line.startsWith('#'))
          .map((line) => line.split('='))
          .map(([name, type]) => [
            name,
            temporal.api.enums.v1.IndexedValueType[
              `INDEXED_VALUE_TYPE_${type!.toUpperCase()}` as 'INDEXED_VALUE_TYPE_KEYWORD'
            ],
          ]),
      );
      await connection.operatorService.addSearchAttributes({ namespace: 'default', searchAttributes });
      await connection.close();
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`the secure Temporal server did not come up: ${String(error)} (see ${logFile})`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
