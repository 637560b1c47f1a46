import net from 'node:net';
import { once } from 'node:events';
import { FaultyLink } from '../campaign/faultyLink';
import { faultKindsFor, Nemesis, seededRandom } from '../campaign/nemesis';

// The fault campaign's network faults: a link that carries bytes, hangs them while cut, delays them,
// and breaks every connection. Here between a client and a real TCP echo server.
describe('the faulty link', () => {
  let echo: net.Server;
  let link: FaultyLink;

  beforeEach(async () => {
    echo = net.createServer((socket) => socket.pipe(socket));
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    const { port } = echo.address() as net.AddressInfo;
    link = new FaultyLink({ host: '127.0.0.1', port }, 0);
    await link.start();
  });
  afterEach(async () => {
    await link.close();
    echo.close();
  });

  const connect = async () => {
    const socket = net.connect(link.port, '127.0.0.1');
    await once(socket, 'connect');
    return socket;
  };
  // Sends `text` and resolves with the time its echo came back.
  const roundTrip = async (socket: net.Socket, text: string) => {
    socket.write(text);
    await once(socket, 'data');
    return Date.now();
  };

  it('carries bytes both ways', async () => {
    const socket = await connect();
    socket.write('hello');
    const [data] = (await once(socket, 'data')) as [Buffer];
    expect(data.toString()).toBe('hello');
    socket.destroy();
  });

  it('hangs while cut, refusing nothing, and delivers what waited once the cut ends', async () => {
    const open = await connect();
    const healedAt = Date.now() + 500;
    link.cut(500);
    const answered = roundTrip(open, 'during the cut');
    // A connection opened during the cut is accepted, not refused; its bytes wait too.
    const fresh = await connect();
    const freshAnswered = roundTrip(fresh, 'new');
    expect(await answered).toBeGreaterThanOrEqual(healedAt);
    expect(await freshAnswered).toBeGreaterThanOrEqual(healedAt);
    open.destroy();
    fresh.destroy();
  });

  it('adds latency each way while slowed, and none after', async () => {
    const socket = await connect();
    link.slow(150, 60_000);
    const sent = Date.now();
    expect((await roundTrip(socket, 'slow')) - sent).toBeGreaterThanOrEqual(300);
    link.slow(0, 0);
    socket.destroy();
  });

  it('drops every open connection, and carries new ones', async () => {
    const socket = await connect();
    const closed = once(socket, 'close');
    expect(link.dropAll()).toBe(1);
    await closed;
    const again = await connect();
    again.write('back');
    const [data] = (await once(again, 'data')) as [Buffer];
    expect(data.toString()).toBe('back');
    again.destroy();
  });
});

describe("the nemesis's faults on the links", () => {
  it('injects one of each kind per round, on the links there are, and records how long each lasts', async () => {
    const upstream = { host: '127.0.0.1', port: 9 };
    const [lock, temporal] = [new FaultyLink(upstream, 0), new FaultyLink(upstream, 0)];
    const done: string[] = [];
    const targets = {
      workers: 3,
      pauseWorker: async () => void done.push('pause'),
      killWorker: async () => void done.push('kill'),
      restartLockServer: async () => 'restarted',
      restartTemporal: async () => void done.push('temporal-restart'),
      links: { lock, temporal },
    };
    expect(faultKindsFor({ links: { lock: null, temporal } })).not.toContain('lock-partition');
    const timing = {
      gapMs: [0, 0],
      pauseMs: [10, 10],
      partitionMs: [3_000, 10_000],
      latencyMs: [100, 500],
      slowForMs: [5_000, 15_000],
      rounds: 1,
    } as const;
    const nemesis = new Nemesis(seededRandom(7), targets, { ...timing }, () => undefined);
    nemesis.start();
    await waitUntil(() => nemesis.coveredAllKinds);
    await nemesis.stop();
    expect(nemesis.faults.map((f) => f.kind).sort()).toEqual([...faultKindsFor(targets)].sort());
    const partition = nemesis.faults.find((f) => f.kind === 'lock-partition')!;
    expect(partition.endsAt! - partition.at).toBeGreaterThanOrEqual(3_000);
    expect(partition.endsAt! - partition.at).toBeLessThanOrEqual(10_000);
    expect(nemesis.faults.find((f) => f.kind === 'temporal-latency')!.detail).toMatch(
      /^\d+ ms of latency each way on the link to Temporal for \d+ ms$/,
    );
  });
});

async function waitUntil(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
}
