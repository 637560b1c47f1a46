import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS } from '../policy/constants';
import { sessionFixture, TEMPORAL_ADDRESS } from './support/temporalFixture';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';
import type { busyActivation } from './support/userWorkflows';

// A worker frozen in the middle of a workflow activation (SIGSTOP: a VM paused for migration, a long
// stop-the-world collection) for longer than the SDK's 5 s sandbox limit. The sandbox's watchdog
// counts wall time, so on resume it stops the activation; Node can then corrupt its async-hook stack
// and crash the whole worker (nodejs/node#38503). lockwarden's worker and plugin set a longer limit.

const PAUSE_MS = 6_000;
const SDK_DEFAULT_MS = 5_000;

// Iterations of busyActivation's loop that take about `cpuMs` of CPU time (not wall time, which a
// loaded machine stretches), so the pause lands inside one activation.
function iterationsFor(cpuMs: number): number {
  const sample = 20_000_000;
  const before = process.cpuUsage();
  let x = 0;
  for (let i = 0; i < sample; i++) x = (Math.imul(x, 31) + i) | 0;
  const used = process.cpuUsage(before);
  const per = ((used.user + used.system) / 1000 + Number(x === 0.5)) / sample;
  return Math.round(cpuMs / per);
}

// CPU time (user + system) the process has used, in ms.
function cpuMsOf(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

// Waits until the (otherwise idle) worker has spent `cpuMs` more CPU time than `baseline`: the
// activation's loop is under way, so a pause now lands inside it, whatever else loads the machine.
async function untilBusy(pid: number, baseline: number, cpuMs: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (cpuMsOf(pid) - baseline < cpuMs) {
    if (Date.now() > deadline) throw new Error('the worker never got busy with the activation');
    await delay(20);
  }
}

function startUserWorker(
  taskQueue: string,
  isolateTimeoutMs?: number,
): Promise<{ worker: ChildProcess; stderr: () => string }> {
  const worker = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(__dirname, 'support', 'pluginWorkerProcess.ts'),
      taskQueue,
      freshSqlitePath(),
    ],
    {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS,
        ...(isolateTimeoutMs ? { LOCKWARDEN_ISOLATE_TIMEOUT_MS: String(isolateTimeoutMs) } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let err = '';
  worker.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    worker.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve({ worker, stderr: () => err });
    });
    worker.once('exit', (code) =>
      reject(new Error(`worker exited before it was ready (code ${code}): ${err}`)),
    );
  });
}

describe('a worker frozen mid-activation for longer than the SDK sandbox limit', () => {
  const fixture = sessionFixture();

  // Starts one busy activation and freezes the worker while it runs. Returns how long the workflow
  // task took (from its start to its completion or failure, on the server's clock) and the messages
  // of the tasks that failed.
  async function pauseDuringActivation(taskQueue: string, worker: ChildProcess) {
    await delay(500); // let the worker settle after its start or its last task
    const baseline = cpuMsOf(worker.pid!);
    const handle = await fixture.env.client.workflow.start<typeof busyActivation>('busyActivation', {
      taskQueue,
      workflowId: unique('busy'),
      args: [iterationsFor(2_000)],
      // The server's own workflow-task timeout (10 s) stays out of the way of the sandbox's limit.
      workflowTaskTimeout: '60 seconds',
    });
    await waitFor(
      'the worker to start the activation',
      async () =>
        ((await handle.fetchHistory()).events ?? []).some((e) => e.workflowTaskStartedEventAttributes),
      30_000,
    );
    await untilBusy(worker.pid!, baseline, 300);
    worker.kill('SIGSTOP');
    await delay(PAUSE_MS);
    worker.kill('SIGCONT');
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    const at = (e: (typeof events)[number]) =>
      Number(e.eventTime!.seconds) * 1000 + Number(e.eventTime!.nanos) / 1e6;
    const started = events.find((e) => e.workflowTaskStartedEventAttributes)!;
    const ended = events.find(
      (e) => e.workflowTaskCompletedEventAttributes || e.workflowTaskFailedEventAttributes,
    )!;
    return {
      taskMs: at(ended) - at(started),
      failures: events
        .filter((e) => e.workflowTaskFailedEventAttributes)
        .map((e) => e.workflowTaskFailedEventAttributes!.failure?.message ?? ''),
    };
  }

  it("with the SDK's 5 s limit, a pause inside an activation fails it (what lockwarden's default prevents)", async () => {
    const taskQueue = unique('pause-sdk');
    const { worker } = await startUserWorker(taskQueue, SDK_DEFAULT_MS);
    try {
      const { taskMs, failures } = await pauseDuringActivation(taskQueue, worker);
      expect(taskMs).toBeGreaterThanOrEqual(PAUSE_MS);
      expect(failures).toEqual([expect.stringMatching(/Script execution timed out after 5000ms/)]);
    } finally {
      worker.kill('SIGKILL');
    }
  }, 150_000);

  it("with lockwarden's default limit, the worker rides out repeated pauses inside activations: none fails, no crash", async () => {
    expect(DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS).toBeGreaterThan(PAUSE_MS * 5);
    const taskQueue = unique('pause-default');
    const { worker, stderr } = await startUserWorker(taskQueue);
    try {
      for (let round = 0; round < 3; round++) {
        const { taskMs, failures } = await pauseDuringActivation(taskQueue, worker);
        expect(taskMs).toBeGreaterThanOrEqual(PAUSE_MS);
        expect(failures).toEqual([]);
      }
      expect(worker.exitCode).toBeNull();
      expect(worker.signalCode).toBeNull();
      expect(stderr()).not.toMatch(/timed out|async hook stack/i);
    } finally {
      worker.kill('SIGKILL');
    }
  }, 150_000);
});
