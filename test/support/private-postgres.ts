import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src/db/embedded/start.js';
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
  const options = { dir: path.join(base, 'postgres'), port: await freePort(), logger: pino({ level: 'silent' }), ephemeral: !settings.durable };
  const handle: PrivatePostgres = {
    current: await startEmbeddedDatabase(options),
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
