import { execFile } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../devkit/freePort';
import { freshSqlitePath } from '../devkit/tempFiles';

// A worker role started with a setting that cannot work ends with one line naming the variable and
// exit code 2: no stack trace, no SDK message that names nothing.
async function start(script: string, env: Record<string, string>) {
  try {
    await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
      cwd: path.join(__dirname, '..'),
      env: { ...roleEnv(script), ...env },
      timeout: 30_000,
    });
    return { code: 0, stderr: '' };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

// The role's own environment: the lock worker's lock service; for the model worker, nothing that
// names a lock (it refuses to start beside one).
function roleEnv(script: string): NodeJS.ProcessEnv {
  if (script.endsWith('main.ts') && !script.endsWith('modelMain.ts'))
    return { ...process.env, LOCK_SERVICE_URL: `sqlite:${freshSqlitePath()}`, ANTHROPIC_API_KEY: '' };
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/LOCK|FENCING/.test(name)));
}

// Holds a port for the length of `run`, as another program would.
async function whileTaken<T>(port: number, run: () => Promise<T>): Promise<T> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  try {
    return await run();
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const oneLine = (stderr: string) => {
  expect(stderr.trim().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
};

describe('a worker misconfigured at start', () => {
  it.each(['worker/main.ts', 'worker/modelMain.ts'])(
    '%s: METRICS_PORT=65535 leaves no port for the SDK exporter, and says so',
    async (script) => {
      const { code, stderr } = await start(script, { METRICS_PORT: '65535' });
      expect(code).toBe(2);
      expect(stderr).toContain('METRICS_PORT: 65535 leaves no port');
      expect(stderr).toContain('LOCKWARDEN_SDK_METRICS_PORT');
      oneLine(stderr);
    },
    40_000,
  );

  it('the /metrics port in use is named, not an unhandled error event', async () => {
    const [port, sdkPort] = [await freePort(), await freePort()];
    const { code, stderr } = await whileTaken(port, () =>
      start('worker/main.ts', { METRICS_PORT: String(port), LOCKWARDEN_SDK_METRICS_PORT: String(sdkPort) }),
    );
    expect(code).toBe(2);
    expect(stderr).toContain(`METRICS_PORT: cannot serve /metrics on 127.0.0.1:${port} (the port is in use)`);
    oneLine(stderr);
  }, 40_000);

  it("the SDK exporter's port in use is named by its variable", async () => {
    const [port, sdkPort] = [await freePort(), await freePort()];
    const { code, stderr } = await whileTaken(sdkPort, () =>
      start('worker/main.ts', { METRICS_PORT: String(port), LOCKWARDEN_SDK_METRICS_PORT: String(sdkPort) }),
    );
    expect(code).toBe(2);
    expect(stderr).toContain(
      `LOCKWARDEN_SDK_METRICS_PORT: the SDK's exporter cannot listen on 127.0.0.1:${sdkPort}`,
    );
    oneLine(stderr);
  }, 40_000);
});
