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

/** Listens on the port (0: one the system picks) and lets go of it: the port it got, or null if it was taken. */
async function listenAndRelease(port: number): Promise<number | null> {
  const server = net.createServer();
  server.listen(port, '127.0.0.1');
  try {
    // once() rejects when the server emits 'error' (EADDRINUSE) instead.
    await once(server, 'listening');
  } catch {
    return null;
  }
  const bound = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return bound;
}

/**
 * A port free on 127.0.0.1 right now, for a server the caller starts next. It comes from below
 * the ephemeral range: a port the system picked (listen on 0) is one it also hands to outgoing
 * connections, and the suite's hundreds of database connections then took it between this
 * check and the server's bind. Below that range only another listener can take it.
 */
export async function freePort(): Promise<number> {
  const candidates = ephemeralPortsStart() - LOWEST_PORT;
  for (let attempt = 0; candidates > 0 && attempt < 50; attempt += 1) {
    const port = await listenAndRelease(LOWEST_PORT + Math.floor(Math.random() * candidates));
    if (port !== null) return port;
  }
  // No room below the ephemeral range on this system: let it pick.
  return (await listenAndRelease(0))!;
}
