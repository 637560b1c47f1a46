// Lock services over TLS with credentials (LOCKWARDEN_TLS=1 scripts/lock-servers.sh): a wrong
// password, a CA that did not sign the server's certificate, or a user with no permission on
// lockwarden's keys stops a worker at start with the reason, never its password, instead of sessions
// that retry forever. Real Redis (tls-port, ACL), PostgreSQL (ssl, SCRAM, client certificate) and
// etcd (client TLS, RBAC).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { openLockService } from '../locks/openLockService';
import { parseEtcdUrl } from '../locks/lockServiceTls';
import { SECURE_SERVERS_DIR, secureServerUrl } from '../devkit/servers';
import { TEMPORAL_ADDRESS } from './support/temporalFixture';
import { ownServer } from './support/lockBackends';

const run = promisify(execFile);
const strangerCa = path.join(SECURE_SERVERS_DIR, 'pki', 'stranger-ca.pem');
const WRONG_PASSWORD = 'wrong-password-4d2a';

// What each server says: a wrong password, an untrusted server certificate, a user with no rights.
const REFUSALS = {
  redis: { password: /WRONGPASS/, ca: /self-signed certificate in certificate chain/, outsider: /NOPERM/ },
  postgres: {
    password: /28P01: password authentication failed/,
    ca: /SELF_SIGNED_CERT_IN_CHAIN/,
    outsider: /42501: permission denied/,
  },
  etcd: {
    password: /authentication failed, invalid user ID or password/,
    ca: /TLS handshake with 127\.0\.0\.1:\d+: UNABLE_TO_VERIFY_LEAF_SIGNATURE/,
    outsider: /PERMISSION_DENIED/,
  },
};

describe.each(['redis', 'postgres', 'etcd'] as const)('%s over TLS with credentials', (backend) => {
  it(`[${backend}] opens with lockwarden's user, the CA and (where asked) a client certificate`, async () => {
    const locks = await openLockService(secureServerUrl(backend));
    try {
      const attempt = await locks.tryAcquire({ key: `tls-${Date.now()}`, requester: 'a', ttlMs: 5_000 });
      expect(attempt.granted).toBe(true);
    } finally {
      await locks.close();
    }
  });

  it.each([
    ['a wrong password', { password: WRONG_PASSWORD }, 'password'],
    ['a CA that did not sign the server certificate', { ca: strangerCa }, 'ca'],
    ['a user without permission on the prefix', { user: 'outsider' as const }, 'outsider'],
  ] as const)(
    `[${backend}] refuses %s at open, naming the server's reason and no password`,
    async (_what, change, kind) => {
      const started = Date.now();
      const error = (await openLockService(secureServerUrl(backend, change)).catch(
        (e: unknown) => e,
      )) as Error;
      expect(error).toMatchObject({
        name: 'LockServiceCredentialsRefused',
        message: expect.stringMatching(REFUSALS[backend][kind]),
      });
      expect(error.message).not.toContain(WRONG_PASSWORD);
      // At once: not after the driver's retries ran out.
      expect(Date.now() - started).toBeLessThan(10_000);
    },
  );

  it(`[${backend}] names a CA file that cannot be read by its parameter`, async () => {
    const url = secureServerUrl(backend, { ca: '/nonexistent/ca.pem' });
    await expect(openLockService(url)).rejects.toThrow(
      /LOCK_SERVICE_URL sslrootcert: cannot read \/nonexistent\/ca\.pem \(ENOENT\)/,
    );
  });
});

describe('the worker over TLS', () => {
  it('stops at start on a wrong password, saying why and printing no password', async () => {
    const url = secureServerUrl('etcd', { password: WRONG_PASSWORD });
    const started = run(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      cwd: path.join(__dirname, '..'),
      env: {
        ...process.env,
        TEMPORAL_ADDRESS,
        LOCK_SERVICE_URL: url,
        ANTHROPIC_API_KEY: '',
        LOG_LEVEL: 'silent',
      },
      timeout: 60_000,
    });
    const failure = (await started.catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
      stdout: string;
    };
    expect(failure.code).toBe(1);
    expect(failure.stderr).toMatch(
      /the lock service refused the worker's credentials or permissions: .*authentication failed/,
    );
    expect(failure.stderr + failure.stdout).not.toContain(WRONG_PASSWORD);
  });

  it('reads an etcd user whose password holds colons and escapes', () => {
    expect(parseEtcdUrl('etcds://lock%40warden:p:a%2Fss@h1:2379,h2:2379')).toMatchObject({
      hosts: ['https://h1:2379', 'https://h2:2379'],
      auth: { username: 'lock@warden', password: 'p:a/ss' },
    });
    expect(parseEtcdUrl('etcd://user@h1:2379')).toBeNull();
  });

  it('refuses TLS files on a plain etcd:// URL', async () => {
    await expect(openLockService('etcd://127.0.0.1:12379?sslrootcert=/tmp/ca.pem')).rejects.toThrow(
      /sslrootcert, sslcert and sslkey need etcds:\/\//,
    );
  });
});

describe('etcd with an RBAC user, across a crash of its server', () => {
  const server = ownServer('etcd', 'tls-etcd-crash', 12483, { tls: true }); // and 12484 for its peers
  beforeAll(() => server.start());
  afterAll(() => server.stop());

  // Every token etcd issued dies with it. etcd3 retries a call refused for an expired token from
  // inside its per-host circuit breaker, which in its half-open state waits for that very call.
  it('[etcd-tls] answers again after its server crashes, its auth token expired, under concurrent calls', async () => {
    const locks = await openLockService(server.url);
    try {
      const key = `crash-${Date.now()}`;
      expect((await locks.tryAcquire({ key, requester: 'a', ttlMs: 30_000 })).granted).toBe(true);
      // Four callers, as a worker's sessions are, until each has been answered twice in a row.
      const caller = async () => {
        for (let answered = 0; answered < 2;) {
          const ok = await Promise.race([
            locks.inspect(key).then(
              () => true,
              () => false,
            ),
            new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 20_000)),
          ]);
          answered = ok ? answered + 1 : 0;
          if (!ok) await new Promise((resolve) => setTimeout(resolve, 500));
        }
      };
      // Three crashes: the deadlock needs the breaker's half-open trial to meet the expired token.
      for (let crash = 0; crash < 3; crash++) {
        server.crash();
        await Promise.all([caller(), caller(), caller(), caller()]);
      }
      expect((await locks.inspect(key)).holder).toBe('a');
    } finally {
      await locks.close();
    }
  }, 150_000);
});
