import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';

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

/** A TCP proxy to 127.0.0.1:`targetPort` whose answers the test can hold back. */
export async function startStallingProxy(targetPort: number): Promise<StallingProxy> {
  const sockets = new Set<net.Socket>();
  const held: Array<() => void> = [];
  const state = { stalled: false, bytesToServer: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('data', (chunk: Buffer) => {
      state.bytesToServer += chunk.length;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      const pass = () => client.write(chunk);
      if (state.stalled) held.push(pass);
      else pass();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
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
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
