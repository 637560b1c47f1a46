import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { secureServersEnv } from '../../devkit/servers';

/** Starts the servers the suites need before any test runs; each script is idempotent. */
export default function globalSetup(): void {
  const root = path.resolve(__dirname, '..', '..');
  // A server that cannot start throws here and fails the run: nothing is skipped.
  execFileSync('bash', [path.join(root, 'scripts', 'temporal-server.sh'), 'start'], { stdio: 'inherit' });
  execFileSync('bash', [path.join(root, 'scripts', 'lock-servers.sh'), 'start'], { stdio: 'inherit' });
  // The same three over TLS with credentials, as production runs them (the conformance suite's second half).
  execFileSync('bash', [path.join(root, 'scripts', 'lock-servers.sh'), 'start'], {
    stdio: 'inherit',
    env: { ...process.env, ...secureServersEnv() },
  });
}
