// A loopback port nothing listens on now, for a server a test or a bench starts on ports of its own.
import net from 'node:net';

/** A port the kernel picks as free on 127.0.0.1 (released again before it is returned). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
