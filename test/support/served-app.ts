import { once } from 'node:events';
import net from 'node:net';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createContext, type AppContext } from '../../src/context.js';
import { ProcessDatabase } from '../../src/db/open.js';
import { createApp } from '../../src/http/app.js';

// The real app served on a free port with its log collected, for tests about the database
// going away: a PostgreSQL that cannot be reached (nothing listening: connections refused at
// once), a server that accepts connections and never answers (every wait runs into its
// timeout), or a real database.

export type LogRecord = { level: number; msg: string } & Record<string, unknown>;

export interface ServedApp {
  url: string;
  ctx: AppContext;
  /** Every record the app logged, parsed. */
  logs: LogRecord[];
  close(): Promise<void>;
}

/** A TCP server that accepts connections and never says a word (a hung database host). */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A database URL nothing answers: port 1 (privileged, and no service of this machine uses it)
 * refuses at once, with no window in which another process could take a freed port; or the
 * given port of a server the test holds.
 */
export function unreachableDatabaseUrl(port = 1): string {
  return `postgres://postgres@127.0.0.1:${port}/lead_intake`;
}

export async function serveApp(options: { databaseUrl: string; env?: Record<string, string> }): Promise<ServedApp> {
  const logs: LogRecord[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line) logs.push(JSON.parse(line) as LogRecord);
      callback();
    },
  });
  const config = loadConfig({ LOG_LEVEL: 'warn', WORKER: 'off', PUBLIC_URL: 'http://localhost:3000', ...options.env });
  const logger = pino({ level: config.LOG_LEVEL }, stream);
  const database = await ProcessDatabase.open({ ...config, DATABASE_URL: options.databaseUrl }, logger);
  const ctx = await createContext(config, { database, logger, validateResponses: true });
  const server: Server = createApp(ctx).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ctx,
    logs,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await ctx.close();
      await database.close();
    },
  };
}
