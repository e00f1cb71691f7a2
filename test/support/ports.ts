import { once } from 'node:events';
import net from 'node:net';

/** A port free on 127.0.0.1 right now (the system picks it), for a server the test starts next. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
