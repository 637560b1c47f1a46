import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { SERVER_URLS } from '../devkit/servers';

// A lock service outage is normal operation: a worker that rides one out, and is shut down during
// it, prints no panic of the Temporal SDK's core. Before lockwarden bounded its local activities'
// attempts itself (worker/localAttemptBound.ts), each attempt the core retried left a start-to-close
// timer behind that panicked ("receive half not dropped: SendError") once the worker had shut down.
describe('the Temporal SDK under a lock service outage', () => {
  it('a worker shut down while its local activities are retried prints no panic, then or later', async () => {
    const pgPort = new URL(SERVER_URLS.postgres).port;
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(__dirname, 'support', 'outageShutdownProcess.ts'), pgPort],
      { cwd: path.join(__dirname, '..'), timeout: 60_000 },
    );
    expect(stdout).toContain('done');
    // The session made its first attempt (which the outage denied) before the worker went away.
    expect(Number(/attempts (\d+)/.exec(stdout)?.[1])).toBeGreaterThanOrEqual(1);
    expect(stderr).not.toMatch(/panicked at/);
  }, 90_000);
});
