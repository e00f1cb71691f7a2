import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** Where ports for the servers a test or script starts are drawn from. */
const LOWEST_PORT = 10_000;

/**
 * The first port of the range the system gives outgoing connections (Linux's
 * ip_local_port_range; elsewhere the lowest common start of such ranges).
 */
function ephemeralPortsStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && Number.isInteger(low)) return low;
  } catch {
    // Not Linux.
  }
  return 32_768;
}

async function canListen(port: number): Promise<boolean> {
  const server = net.createServer();
  server.listen(port, '127.0.0.1');
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => { throw error; })]);
  } catch {
    return false;
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return true;
}

/**
 * A port free on 127.0.0.1 right now, for a server the caller starts next. It comes from below
 * the ephemeral range: a port the system picked (listen on 0) is one it also hands to outgoing
 * connections, and the suite's hundreds of database connections then took it between this
 * check and the server's bind. Below that range only another listener can take it.
 */
export async function freePort(): Promise<number> {
  const end = ephemeralPortsStart();
  for (let attempt = 0; end - LOWEST_PORT > 1_000 && attempt < 50; attempt += 1) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (end - LOWEST_PORT));
    if (await canListen(port)) return port;
  }
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
