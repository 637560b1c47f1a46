// The campaign's nemesis: a seeded schedule of pauses, kills, restarts, partitions and latency.
import {
  CLUSTER_FAULT_KINDS,
  clusterFaultKinds,
  type ClusterFaultKind,
  type Fault,
  type FaultKind,
} from './checker';
import { planClusterFault } from './clusterFaults';
import type { FaultyLink } from './faultyLink';

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

/** What the nemesis can do to the campaign's processes and links. */
export interface FaultTargets {
  workers: number;
  pauseWorker(i: number, ms: number): Promise<void>;
  killWorker(i: number): Promise<void>;
  /** Absent on the cluster, whose own faults (CLUSTER_FAULT_KINDS) take the servers' place. */
  restartLockServer?(): Promise<string>;
  restartTemporal?(): Promise<void>;
  /** The links between the workers and the lock server (none for embedded SQLite) and Temporal. */
  links: { lock: FaultyLink | null; temporal: FaultyLink | null };
  /** The campaign runs on scripts/cluster.sh's cluster, on this lock service: its faults are injected there. */
  cluster?: 'etcd' | 'zookeeper';
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

const PROCESS_KINDS: FaultKind[] = ['pause', 'kill', 'lock-server-restart', 'temporal-restart'];
const LINK_KINDS = ['partition', 'latency', 'drop'] as const;

/** The kinds of fault the nemesis injects on `targets`: no lock link, no fault on it. */
export function faultKindsFor(targets: Pick<FaultTargets, 'links' | 'cluster'>): FaultKind[] {
  if (targets.cluster) return ['pause', 'kill', ...clusterFaultKinds(targets.cluster)];
  const links = targets.links.lock ? (['lock', 'temporal'] as const) : (['temporal'] as const);
  return [...PROCESS_KINDS, ...links.flatMap((link) => LINK_KINDS.map((f) => `${link}-${f}` as FaultKind))];
}

/**
 * Injects faults on a seeded schedule, each logged with its time: every round takes every kind in a
 * seeded order, one every `gapMs` or so, until stopped. A pause outlasts the lease TTL; a partition
 * lasts `partitionMs`, latency `latencyMs` each way for `slowForMs`.
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
    /** Gaps between faults, how long each lasts, and how many rounds of every kind to inject. */
    private readonly timing: {
      gapMs: readonly [number, number];
      pauseMs: readonly [number, number];
      partitionMs: readonly [number, number];
      latencyMs: readonly [number, number];
      slowForMs: readonly [number, number];
      rounds: number;
    },
    private readonly say: (line: string) => void,
  ) {
    this.kinds = faultKindsFor(targets);
  }

  /** The kinds this nemesis injects. */
  readonly kinds: FaultKind[];

  /** Every kind of fault injected at least once. */
  get coveredAllKinds(): boolean {
    return this.kinds.every((kind) => this.faults.some((f) => f.kind === kind));
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

  private between([low, high]: readonly [number, number]): number {
    return Math.round(low + this.random() * (high - low));
  }

  private async run(): Promise<void> {
    for (let round = 0; round < this.timing.rounds && !this.stopped; round++) {
      const round = shuffled(this.kinds, this.random);
      for (const kind of round) {
        await this.sleepUnlessStopped(this.between(this.timing.gapMs));
        if (this.stopped) return;
        await this.inject(kind);
      }
    }
  }

  private async inject(kind: FaultKind): Promise<void> {
    const at = Date.now();
    let detail: string;
    switch (kind) {
      case 'pause': {
        const worker = Math.floor(this.random() * this.targets.workers);
        const ms = this.between(this.timing.pauseMs);
        detail = `SIGSTOP worker ${worker} for ${ms} ms, then SIGCONT`;
        this.record(kind, at, detail, at + ms);
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
        detail = await this.targets.restartLockServer!();
        this.say(`  ... ${detail}`);
        return;
      case 'temporal-restart':
        this.record(kind, at, 'SIGKILL the Temporal dev server, start it on its database');
        await this.targets.restartTemporal!();
        return;
      default:
        if ((CLUSTER_FAULT_KINDS as readonly string[]).includes(kind))
          return this.injectOnCluster(kind as ClusterFaultKind, at);
        return this.injectOnLink(kind, at);
    }
  }

  // A fault on the cluster: waits until it is over and the cluster is whole again.
  private async injectOnCluster(kind: ClusterFaultKind, at: number): Promise<void> {
    const plan = await planClusterFault(kind, {
      outageMs: this.between(this.timing.partitionMs),
      slowForMs: this.between(this.timing.slowForMs),
      pick: (n) => Math.floor(this.random() * n),
    });
    this.record(kind, at, plan.detail);
    await plan.run();
    const fault = this.faults.at(-1)!;
    fault.endsAt = Date.now();
  }

  // A fault on one of the links: `lock-partition`, `temporal-latency`, ...
  private injectOnLink(kind: FaultKind, at: number): void {
    const [name, fault] = kind.split('-') as ['lock' | 'temporal', (typeof LINK_KINDS)[number]];
    const link = this.targets.links[name];
    if (!link) throw new Error(`no ${name} link to inject ${kind} on`);
    const to = name === 'lock' ? 'the lock server' : 'Temporal';
    if (fault === 'partition') {
      const ms = this.between(this.timing.partitionMs);
      this.record(
        kind,
        at,
        `cut the workers' link to ${to} both ways for ${ms} ms (connections hang)`,
        at + ms,
      );
      link.cut(ms);
    } else if (fault === 'latency') {
      const [ms, forMs] = [this.between(this.timing.latencyMs), this.between(this.timing.slowForMs)];
      this.record(kind, at, `${ms} ms of latency each way on the link to ${to} for ${forMs} ms`, at + forMs);
      link.slow(ms, forMs);
    } else {
      const count = link.dropAll();
      this.record(kind, at, `dropped the ${count} open connection(s) to ${to}`);
    }
  }

  private record(kind: FaultKind, at: number, detail: string, endsAt?: number): void {
    this.faults.push({ kind, at, detail, ...(endsAt ? { endsAt } : {}) });
    this.say(`fault ${this.faults.length} at ${new Date(at).toISOString()}: ${kind}: ${detail}`);
  }

  private async sleepUnlessStopped(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.stopped && Date.now() < until)
      await new Promise((r) => setTimeout(r, Math.min(200, until - Date.now())));
  }
}
