// A TCP proxy the campaign owns between its workers and a server, which it can slow, cut or hang.
import net from 'node:net';

/**
 * A TCP link the fault campaign owns between its workers and a server (the lock service, Temporal),
 * which it can cut, slow down or break. Written on Node's `net` rather than run as a separate proxy
 * (Toxiproxy and the like): a few dozen lines, no binary to install, and the one behaviour a
 * partition needs that a refusing proxy lacks: connections hang. While cut, bytes wait in the link
 * (as TCP retransmits them after a partition heals) and new connections are accepted but not carried
 * on; latency delays every chunk each way, in order; a drop destroys every open connection.
 */
export class FaultyLink {
  private readonly server: net.Server;
  private readonly pairs = new Set<Pair>();
  private cutUntil = 0;
  private latencyMs = 0;
  private latencyUntil = 0;

  constructor(
    private readonly upstream: { host: string; port: number },
    /** The port to listen on (0: any free one; `port` says which once started). */
    private readonly listenPort: number,
    /** The address to listen on: loopback, or the host's end of a test's network namespace. */
    private readonly listenHost = '127.0.0.1',
  ) {
    this.server = net.createServer((client) => this.carry(client));
  }

  /** The port clients connect to instead of the upstream's. */
  get port(): number {
    return (this.server.address() as net.AddressInfo | null)?.port ?? this.listenPort;
  }

  /** `host:port` clients connect to instead of the upstream. */
  get address(): string {
    return `${this.listenHost}:${this.port}`;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.listenPort, this.listenHost, () => resolve());
    });
  }

  /** Cuts the link both ways for `ms`: nothing passes, nothing is refused, everything waits. */
  cut(ms: number): void {
    this.cutUntil = Math.max(this.cutUntil, Date.now() + ms);
    setTimeout(() => this.pump(), ms + 1);
  }

  /** Ends a cut and any latency now: what waited is delivered. */
  heal(): void {
    this.cutUntil = 0;
    this.latencyUntil = 0;
    this.pump();
  }

  /** Adds `ms` of latency each way for `forMs`. */
  slow(ms: number, forMs: number): void {
    this.latencyMs = ms;
    this.latencyUntil = Date.now() + forMs;
  }

  /** Destroys every open connection, as a reset would; new ones are carried as usual. */
  dropAll(): number {
    const count = this.pairs.size;
    for (const pair of this.pairs) pair.destroy();
    return count;
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private get cutNow(): boolean {
    return Date.now() < this.cutUntil;
  }

  private delay(): number {
    return Date.now() < this.latencyUntil ? this.latencyMs : 0;
  }

  private carry(client: net.Socket): void {
    const pair = new Pair(client, () => this.pairs.delete(pair));
    this.pairs.add(pair);
    const queue = (to: Chunk[]) => (chunk: Buffer) => {
      to.push({ chunk, at: Date.now() + this.delay() });
      this.pumpPair(pair);
    };
    client.on('data', queue(pair.toServer));
    const connect = () => {
      if (pair.destroyed) return;
      if (this.cutNow) return void setTimeout(connect, this.cutUntil - Date.now() + 1);
      const server = net.connect(this.upstream.port, this.upstream.host);
      server.on('data', queue(pair.toClient));
      server.on('connect', () => this.pumpPair(pair));
      pair.connect(server);
    };
    connect();
  }

  private pump(): void {
    for (const pair of this.pairs) this.pumpPair(pair);
  }

  // Delivers each direction's chunks whose time has come, in order, unless the link is cut.
  private pumpPair(pair: Pair): void {
    if (pair.destroyed || this.cutNow) return;
    for (const [queue, to] of [
      [pair.toServer, pair.server],
      [pair.toClient, pair.client],
    ] as const) {
      if (!to || to.connecting) continue;
      while (queue.length && queue[0]!.at <= Date.now()) to.write(queue.shift()!.chunk);
      if (queue.length) setTimeout(() => this.pumpPair(pair), queue[0]!.at - Date.now());
    }
  }
}

interface Chunk {
  chunk: Buffer;
  /** When it may be delivered (latency). */
  at: number;
}

/** One client connection and its upstream connection, with the bytes waiting each way. */
class Pair {
  readonly toServer: Chunk[] = [];
  readonly toClient: Chunk[] = [];
  server: net.Socket | null = null;
  destroyed = false;

  constructor(
    readonly client: net.Socket,
    private readonly forget: () => void,
  ) {
    client.on('error', () => this.destroy());
    client.on('close', () => this.destroy());
  }

  connect(server: net.Socket): void {
    this.server = server;
    server.on('error', () => this.destroy());
    server.on('close', () => this.destroy());
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.client.destroy();
    this.server?.destroy();
    this.forget();
  }
}
