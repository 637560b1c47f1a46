// The campaign's worker processes: started, killed, paused and restarted by the nemesis.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

/** How each campaign worker is started: its environment, its journal file comes from the pool. */
export interface WorkerPoolOptions {
  size: number;
  runDir: string;
  env: Record<string, string>;
  /** The worker program; the campaign's worker (campaignWorker.ts) when absent. */
  script?: string;
  /** The network namespace (a cluster's host) worker `i` runs in; this host's when absent. */
  hostOf?(i: number): string;
}

/**
 * The campaign's worker processes: started, paused (SIGSTOP, then SIGCONT), killed (SIGKILL) and
 * replaced. Each process journals the lock service's answers to a file of its own.
 */
export class WorkerPool {
  private readonly workers: (ChildProcess | null)[];
  /** Workers we are stopping or killing: their exit is expected. */
  private readonly ending = new Set<ChildProcess>();
  private spawned = 0;
  readonly journals: string[] = [];
  /** Workers that exited on their own (a crash is a bug): each was replaced. */
  readonly crashes: string[] = [];

  constructor(private readonly options: WorkerPoolOptions) {
    this.workers = Array.from({ length: options.size }, () => null);
  }

  get size(): number {
    return this.workers.length;
  }

  startAll(): void {
    for (let i = 0; i < this.workers.length; i++) this.start(i);
  }

  /** Stops (SIGSTOP) worker `i` for `ms`, then lets it go on (SIGCONT). */
  async pause(i: number, ms: number): Promise<void> {
    const worker = this.workers[i];
    if (!worker?.pid) return;
    worker.kill('SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, ms));
    worker.kill('SIGCONT');
  }

  /** Kills worker `i` with SIGKILL and starts a new process in its place. */
  async kill(i: number): Promise<void> {
    await this.killOnly(i);
    this.start(i);
  }

  /** Kills every worker at once, then starts them all again (the embedded SQLite service's restart). */
  async killAll(): Promise<void> {
    await Promise.all(this.workers.map((_, i) => this.killOnly(i)));
    this.startAll();
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      this.workers.map(async (worker) => {
        if (!worker || worker.exitCode !== null || worker.signalCode !== null) return;
        this.ending.add(worker);
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.kill('SIGCONT');
        worker.kill('SIGTERM');
        const timer = setTimeout(() => worker.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  private start(i: number): void {
    const journal = path.join(this.options.runDir, `journal-${++this.spawned}.jsonl`);
    this.journals.push(journal);
    const script = this.options.script ?? path.join(__dirname, 'campaignWorker.ts');
    const command = [process.execPath, '--import', 'tsx', script];
    // `ip netns exec` execs the worker in place: the pid the nemesis signals is the worker's.
    const [program, ...args] = this.options.hostOf
      ? ['ip', 'netns', 'exec', this.options.hostOf(i), ...command]
      : command;
    const worker = spawn(program!, args, {
      env: { ...process.env, ...this.options.env, CAMPAIGN_JOURNAL: journal },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    this.workers[i] = worker;
    worker.once('exit', (code, signal) => {
      if (this.ending.has(worker)) return;
      this.crashes.push(
        `worker ${i} (journal ${path.basename(journal)}) exited by itself: ${signal ?? `code ${code}`}`,
      );
      if (this.workers[i] === worker) this.start(i);
    });
  }

  private async killOnly(i: number): Promise<void> {
    const worker = this.workers[i];
    if (!worker || worker.exitCode !== null || worker.signalCode !== null) return;
    this.ending.add(worker);
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.kill('SIGKILL');
    await exited;
  }
}
