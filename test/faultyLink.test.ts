import net from 'node:net';
import { once } from 'node:events';
import { FaultyLink } from '../bench/campaign/faultyLink';

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
