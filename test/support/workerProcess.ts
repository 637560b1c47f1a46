import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { TEMPORAL_ADDRESS } from './temporalFixture';

/**
 * Runs `worker/main.ts` in a process of its own, on one task queue and one SQLite lock file, so a
 * test can stop it (SIGSTOP, a frozen host) or kill it (SIGKILL, a crashed host). No model is
 * configured: the deterministic policy decides.
 */
export function startWorkerProcess(
  lockFile: string,
  taskQueue: string,
  extraEnv: Record<string, string> = {},
): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: path.join(__dirname, '..', '..'),
    env: {
      ...process.env,
      TEMPORAL_ADDRESS,
      LOCKWARDEN_TASK_QUEUE: taskQueue,
      LOCK_SERVICE_URL: `sqlite:${lockFile}`,
      LOG_LEVEL: 'silent',
      ANTHROPIC_API_KEY: '',
      ...extraEnv,
    },
    stdio: 'ignore',
  });
}

/** Sends `signal` and waits for the process to exit. */
export async function stopWorkerProcess(worker: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return;
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  worker.kill(signal);
  await exited;
}
