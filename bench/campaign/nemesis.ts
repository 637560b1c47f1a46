import type { Fault } from './checker';

/** A seeded pseudo-random generator (mulberry32): the same seed, the same schedule of faults. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** What the nemesis can do to the campaign's processes. */
export interface FaultTargets {
  workers: number;
  pauseWorker(i: number, ms: number): Promise<void>;
  killWorker(i: number): Promise<void>;
  restartLockServer(): Promise<string>;
  restartTemporal(): Promise<void>;
}

/** A seeded Fisher-Yates shuffle of `items`. */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export const FAULT_KINDS: Fault['kind'][] = ['pause', 'kill', 'lock-server-restart', 'temporal-restart'];

/**
 * Injects faults on a seeded schedule, each logged with its time: every round takes the four kinds
 * in a seeded order, one every `gapMs` or so, until stopped. A pause outlasts the lease TTL.
 */
export class Nemesis {
  readonly faults: Fault[] = [];
  /** Why the nemesis stopped on its own: a fault it could not inject (the campaign then fails). */
  error: Error | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly random: () => number,
    private readonly targets: FaultTargets,
    /** Gaps between faults, pause lengths, and how many rounds of the four kinds to inject. */
    private readonly timing: { gapMs: [number, number]; pauseMs: [number, number]; rounds: number },
    private readonly say: (line: string) => void,
  ) {}

  /** Every kind of fault injected at least once. */
  get coveredAllKinds(): boolean {
    return FAULT_KINDS.every((kind) => this.faults.some((f) => f.kind === kind));
  }

  start(): void {
    this.running = this.run().catch((error: unknown) => {
      this.error = error instanceof Error ? error : new Error(String(error));
      this.stopped = true;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private between([low, high]: [number, number]): number {
    return Math.round(low + this.random() * (high - low));
  }

  private async run(): Promise<void> {
    for (let round = 0; round < this.timing.rounds && !this.stopped; round++) {
      const round = shuffled(FAULT_KINDS, this.random);
      for (const kind of round) {
        await this.sleepUnlessStopped(this.between(this.timing.gapMs));
        if (this.stopped) return;
        await this.inject(kind);
      }
    }
  }

  private async inject(kind: Fault['kind']): Promise<void> {
    const at = Date.now();
    let detail: string;
    switch (kind) {
      case 'pause': {
        const worker = Math.floor(this.random() * this.targets.workers);
        const ms = this.between(this.timing.pauseMs);
        detail = `SIGSTOP worker ${worker} for ${ms} ms, then SIGCONT`;
        this.record(kind, at, detail);
        await this.targets.pauseWorker(worker, ms);
        return;
      }
      case 'kill': {
        const worker = Math.floor(this.random() * this.targets.workers);
        detail = `SIGKILL worker ${worker}, a new one started`;
        this.record(kind, at, detail);
        await this.targets.killWorker(worker);
        return;
      }
      case 'lock-server-restart':
        this.record(kind, at, 'crash and restart the lock service');
        detail = await this.targets.restartLockServer();
        this.say(`  ... ${detail}`);
        return;
      case 'temporal-restart':
        this.record(kind, at, 'SIGKILL the Temporal dev server, start it on its database');
        await this.targets.restartTemporal();
        return;
    }
  }

  private record(kind: Fault['kind'], at: number, detail: string): void {
    this.faults.push({ kind, at, detail });
    this.say(`fault ${this.faults.length} at ${new Date(at).toISOString()}: ${kind}: ${detail}`);
  }

  private async sleepUnlessStopped(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.stopped && Date.now() < until)
      await new Promise((r) => setTimeout(r, Math.min(200, until - Date.now())));
  }
}
