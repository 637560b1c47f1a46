// A promise face on node-zookeeper-client: every call bounded by a deadline, a new session after one expires.
import zookeeper, { type Client, type Stat, type Transaction } from 'node-zookeeper-client';

/**
 * Longest a ZooKeeper call may take before it fails (as etcd's calls do, ETCD_CALL_DEADLINE_MS).
 * The client queues a call made while it reconnects and sends it once a server answers: without a
 * deadline, a call made during an outage would wait for as long as the outage, and the sweep with it.
 */
export const ZK_CALL_DEADLINE_MS = 15_000;

/**
 * The session timeout the client asks for. lockwarden's nodes are persistent (a lease lives as long
 * as its holder's session, not the worker's connection), so the session only decides how long the
 * client keeps one connection's state: a server clamps it to 2 to 20 tick times.
 */
const SESSION_TIMEOUT_MS = 30_000;

/** ZooKeeper's error codes lockwarden acts on (node-zookeeper-client's Exception codes). */
export const ZK = {
  NO_NODE: -101,
  NODE_EXISTS: -110,
  BAD_VERSION: -103,
  NOT_EMPTY: -111,
} as const;

/** The ZooKeeper error code of a failed call, or null for any other failure. */
export function zkCode(error: unknown): number | null {
  const code = (error as { getCode?: () => number } | null)?.getCode?.();
  return typeof code === 'number' ? code : null;
}

/** A 64-bit stat field (a zxid, a time) as a bigint. */
export const statLong = (field: Buffer): bigint => field.readBigInt64BE(0);

/** A stat time (milliseconds on the server that wrote the node) as a number. */
export const statTime = (field: Buffer): number => Number(statLong(field));

/** One result of a multi: a created node's path, or a changed node's stat. */
export interface MultiResult {
  path?: string;
  stat?: Stat;
}

/**
 * One client session to a ZooKeeper ensemble, renewed when the server expires it: the client emits
 * `expired` and never reconnects by itself, so a worker whose session lapsed in a long partition
 * would otherwise fail every call until it restarted.
 */
export class ZkSession {
  private client: Client;
  private closed = false;

  constructor(private readonly connectionString: string) {
    this.client = this.connect();
  }

  private connect(): Client {
    const client = zookeeper.createClient(this.connectionString, {
      sessionTimeout: SESSION_TIMEOUT_MS,
      spinDelay: 500,
      retries: 0,
    });
    client.on('state', (state: { name: string }) => {
      if (state.name !== 'EXPIRED' || this.closed || this.client !== client) return;
      client.close();
      this.client = this.connect();
    });
    client.connect();
    return client;
  }

  /** Runs one client call, failing after ZK_CALL_DEADLINE_MS with an error naming `what`. */
  private call<T>(what: string, run: (client: Client, done: (error: unknown, value?: T) => void) => void) {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`ZooKeeper ${what}: no answer within ${ZK_CALL_DEADLINE_MS} ms`)),
        ZK_CALL_DEADLINE_MS,
      );
      run(this.client, (error, value) => {
        clearTimeout(timer);
        if (error) reject(error instanceof Error ? error : new Error(String(error)));
        else resolve(value as T);
      });
    });
  }

  getData(path: string): Promise<{ data: Buffer; stat: Stat }> {
    return this.call(`read of ${path}`, (client, done) =>
      client.getData(path, (error, data, stat) => done(error, { data: data ?? Buffer.alloc(0), stat })),
    );
  }

  /** A node's data and stat, or null when it does not exist. */
  async getDataIfAny(path: string): Promise<{ data: Buffer; stat: Stat } | null> {
    return this.getData(path).catch((error: unknown) => {
      if (zkCode(error) === ZK.NO_NODE) return null;
      throw error;
    });
  }

  /** A node's children and its own stat, or null when it does not exist. */
  getChildren(path: string): Promise<{ children: string[]; stat: Stat } | null> {
    return this.call(`list of ${path}`, (client, done) =>
      client.getChildren(path, (error, children, stat) => {
        if (zkCode(error) === ZK.NO_NODE) done(null, null);
        else done(error, { children, stat });
      }),
    );
  }

  exists(path: string): Promise<Stat | null> {
    return this.call(`stat of ${path}`, (client, done) =>
      client.exists(path, (error, stat) => done(error, stat ?? null)),
    );
  }

  setData(path: string, data: Buffer, version = -1): Promise<Stat> {
    return this.call(`write of ${path}`, (client, done) => client.setData(path, data, version, done));
  }

  /** Creates a persistent node and every missing parent; an existing node is left as it is. */
  mkdirp(path: string): Promise<void> {
    return this.call(`creation of ${path}`, (client, done) => client.mkdirp(path, (error) => done(error)));
  }

  /** Removes a node if it is at `version` (-1: any); a node already gone is not an error. */
  async removeIfAny(path: string, version = -1): Promise<void> {
    await this.call<void>(`removal of ${path}`, (client, done) =>
      client.remove(path, version, (error) => done(zkCode(error) === ZK.NO_NODE ? null : error)),
    );
  }

  /** Commits the operations `build` adds as one ZooKeeper transaction (all or none, one zxid). */
  multi(what: string, build: (transaction: Transaction) => void): Promise<MultiResult[]> {
    return this.call(what, (client, done) => {
      const transaction = client.transaction();
      build(transaction);
      transaction.commit((error, results: MultiResult[]) => done(error, results));
    });
  }

  close(): void {
    this.closed = true;
    this.client.close();
  }
}

export { zookeeper };
