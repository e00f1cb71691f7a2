import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';

/** One client's connection through the proxy: `index` counts connections from 0. */
export interface ProxiedConnection {
  index: number;
  client: net.Socket;
  upstream: net.Socket;
}

export interface TcpProxy {
  port: number;
  /** Connections made so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/**
 * A TCP proxy to 127.0.0.1:`targetPort`. The client's bytes go to the server as they come;
 * what the server sends back is handed to `toClient`, which passes it on (or holds it, or
 * drops the connection) as the test needs. `toServer` sees the client's bytes on their way.
 */
export async function startTcpProxy(
  targetPort: number,
  toClient: (connection: ProxiedConnection, chunk: Buffer) => void,
  toServer: (chunk: Buffer) => void = () => {},
): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    const connection = { index: connections++, client, upstream };
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('data', (chunk: Buffer) => {
      toServer(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => toClient(connection, chunk));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface StallingProxy {
  port: number;
  /** Bytes the proxy has passed from its clients to the server. */
  readonly bytesToServer: number;
  /** Holds back the server's answers (requests still reach it), as a paused or stalled server looks to its clients. */
  stall(): void;
  /** Passes on what was held back, and everything after. */
  resume(): void;
  close(): Promise<void>;
}

/** A TCP proxy whose answers the test can hold back. */
export async function startStallingProxy(targetPort: number): Promise<StallingProxy> {
  const held: Array<() => void> = [];
  const state = { stalled: false, bytesToServer: 0 };
  const proxy = await startTcpProxy(
    targetPort,
    ({ client }, chunk) => {
      const pass = () => client.write(chunk);
      if (state.stalled) held.push(pass);
      else pass();
    },
    (chunk) => {
      state.bytesToServer += chunk.length;
    },
  );
  return {
    port: proxy.port,
    get bytesToServer() {
      return state.bytesToServer;
    },
    stall: () => {
      state.stalled = true;
    },
    resume: () => {
      state.stalled = false;
      for (const pass of held.splice(0)) pass();
    },
    close: proxy.close,
  };
}
