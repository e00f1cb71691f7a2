import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { startEmbeddedDatabase, type EmbeddedDatabase, type EmbeddedDatabaseOptions } from '../../src/db/embedded/start.js';
import { freePort } from './ports.js';

export interface PrivatePostgres {
  /** The server as it runs now (replaced by `restart`). */
  current: EmbeddedDatabase;
  /** postgres://... of its `lead_intake` database. */
  url: string;
  port: number;
  /** Fast shutdown, `downMs` with nothing on the port, then the same server again. */
  restart(downMs: number): Promise<void>;
  /** Fast shutdown (open transactions roll back, connections are closed); resolves once the server has exited. */
  stop(): Promise<void>;
  /** The same server again, after `stop`; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its files. */
  remove(): Promise<void>;
}

/** A port that another process took between freePort() and the server's bind, as the start reports it. */
const PORT_TAKEN = /Port \d+ is (held by|in use)|could not bind|already in use/i;

/**
 * Starts the server on a free port. The server binds the port itself, after freePort() let go
 * of it, so another process can take it in between: then it starts again on another.
 */
async function startOnSomeFreePort(options: EmbeddedDatabaseOptions & { port: number }): Promise<EmbeddedDatabase> {
  for (let attempt = 1; ; attempt += 1) {
    options.port = await freePort();
    try {
      return await startEmbeddedDatabase(options);
    } catch (error) {
      if (attempt === 3 || !(error instanceof Error) || !PORT_TAKEN.test(error.message)) throw error;
    }
  }
}

/**
 * A PostgreSQL of the test's own (embedded binaries, a temporary data directory, a free
 * port), for tests that stop and start a database: never the shared server.
 */
export async function startPrivatePostgres(label: string, settings: { durable?: boolean } = {}): Promise<PrivatePostgres> {
  const base = await mkdtemp(path.join(os.tmpdir(), `lead-intake-${label}-`));
  // As root, PostgreSQL runs as the postgres account, which must enter this directory.
  await chmod(base, 0o755);
  // Durable: fsync and synchronous commit as in production (the fault test); otherwise
  // neither, since a test's data is thrown away.
  const options = { dir: path.join(base, 'postgres'), port: 0, logger: pino({ level: 'silent' }), ephemeral: !settings.durable };
  const handle: PrivatePostgres = {
    current: await startOnSomeFreePort(options),
    url: '',
    port: options.port,
    async restart(downMs) {
      await handle.stop();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await handle.start();
    },
    stop: () => handle.current.stop(),
    async start() {
      handle.current = await startEmbeddedDatabase(options);
    },
    async remove() {
      await handle.current.stop();
      // As root with a private TMPDIR the cluster was relocated out of `base` (see location.ts).
      const relocated = !handle.current.dataDir.startsWith(`${base}${path.sep}`);
      if (relocated) await rm(path.dirname(handle.current.dataDir), { recursive: true, force: true });
      await rm(base, { recursive: true, force: true });
    },
  };
  handle.url = handle.current.url;
  return handle;
}
