import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

// Temporal's client retries a failed call on a timer that Connection.close() leaves running; a retry
// due after the close throws out of the timer and kills the process (it failed a CI run, in a suite
// that ran after the one that closed). lockwarden's connections end such a call instead.
const run = promisify(execFile);
const script = path.join(__dirname, 'support', 'closeDuringRetry.ts');

async function closeDuringRetry(
  how: 'plain' | 'guarded',
): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, ['--import', 'tsx', script, how], { cwd: path.join(__dirname, '..') }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

describe('a connection closed while a call waits to be retried', () => {
  it("kills the process on the SDK's own connection: the retry throws out of its timer", async () => {
    const { code, stderr } = await closeDuringRetry('plain');
    expect(code).not.toBe(0);
    expect(stderr).toContain('Channel has been shut down');
    expect(stderr).toContain('grpc-retry');
  }, 30_000);

  it("ends the call as cancelled on lockwarden's connection, and one made after the close too", async () => {
    const { code, stdout, stderr } = await closeDuringRetry('guarded');
    expect(stderr).not.toContain('Channel has been shut down');
    expect(code).toBe(0);
    const closed = expect.stringMatching(/^rejected: .*CANCELLED: the connection to Temporal was closed/);
    expect(JSON.parse(stdout)).toEqual({ outcome: closed, afterClose: closed });
    expect(stderr).not.toContain('TypeError');
  }, 30_000);
});
