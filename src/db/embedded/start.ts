import { createHash } from 'node:crypto';
import { access } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { PROJECT_ROOT } from '../../paths.js';
import { isUniqueViolation } from '../sql.js';
import { EmbeddedDatabaseError } from './errors.js';
import { resolveLocation, type Location } from './location.js';
import { readPostmaster, sameDirectory, SUPERUSER, whoHolds, withAdminClient } from './probe.js';
import { initialiseCluster, launchServer, type ServerProcess } from './server.js';

export { EmbeddedDatabaseError } from './errors.js';

// With no DATABASE_URL the service runs on a real PostgreSQL shipped through npm. One
// server owns a data directory; every other process of the checkout (the CLI, a worker, a
// second `npm start`) finds it through the directory's postmaster.pid and joins it after
// checking that the server on that port really serves this directory. A server of another
// checkout, or any other program, on the port is never joined: that is an error.

const DATABASE_NAME = 'lead_intake';
const DERIVED_PORTS = { first: 54330, count: 1000 };

export interface EmbeddedDatabaseOptions {
  /** EMBEDDED_PG_DIR; a relative path is taken from the checkout's root. */
  dir: string;
  /** EMBEDDED_PG_PORT; unset: a port derived from the data directory (two checkouts get two ports). */
  port?: number;
  logger: Logger;
  /** Test clusters: no fsync (their data is thrown away). */
  ephemeral?: boolean;
}

export interface EmbeddedDatabase {
  url: string;
  port: number;
  /** Where the cluster really lives (differs from the configured directory when relocated). */
  dataDir: string;
  /** true: this process started the server; false: it joined one already running. */
  started: boolean;
  /**
   * For a process leaving: stops the server if this process started it and no other
   * process still uses it; a joined server is left alone.
   */
  close(): Promise<void>;
  /** Fast shutdown of a server this process started, whoever uses it (tests restart it). */
  stop(): Promise<void>;
}

export async function startEmbeddedDatabase(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  try {
    return await start(options);
  } catch (error) {
    if (error instanceof EmbeddedDatabaseError) throw error;
    throw new EmbeddedDatabaseError(`The embedded PostgreSQL could not be started: ${error instanceof Error ? error.message : String(error)}.`);
  }
}

/** A stable port per data directory in 54330-55329, so checkouts side by side do not collide. */
function derivedPort(dataDir: string): number {
  return DERIVED_PORTS.first + (createHash('sha256').update(dataDir).digest().readUInt32BE(0) % DERIVED_PORTS.count);
}

async function start(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const log = options.logger.child({ embeddedPostgres: true });
  const location = await resolveLocation(path.resolve(PROJECT_ROOT, options.dir), log);
  const where = {
    data: location.dataDir,
    ...(location.relocated ? { linkedFrom: location.visibleDir } : {}),
    ...(location.account ? { runsAs: 'postgres' } : {}),
  };
  if (location.relocated) {
    log.info(
      where,
      `this process runs as root and the checkout is in a private directory: the embedded PostgreSQL runs as the postgres account, with its data in ${location.dataDir} (${location.visibleDir} links there)`,
    );
  }

  const running = await findOwnServer(location.dataDir);
  if (running) return joined(location, running, options, log, where);

  const port = options.port ?? derivedPort(location.dataDir);
  const holder = await whoHolds(port);
  if (holder.kind !== 'free') throw portTaken(port, holder, location);

  if (!(await isInitialised(location.dataDir))) {
    await initialiseCluster(location, { ephemeral: options.ephemeral ?? false });
    log.info(where, 'created a new embedded PostgreSQL cluster');
  }
  let server: ServerProcess;
  try {
    server = await launchServer(location, port, { ephemeral: options.ephemeral ?? false });
  } catch (error) {
    // Another process of this checkout may have started it a moment earlier.
    const raced = await findOwnServer(location.dataDir);
    if (raced) return joined(location, raced, options, log, where);
    throw error;
  }
  server.onUnexpectedExit((detail) => log.error({ ...where, port, detail }, 'the embedded PostgreSQL exited unexpectedly; restart this process to start it again'));
  await ensureDatabase(port);
  log.info({ ...where, port, serverPid: server.pid, log: server.logFile }, 'DATABASE_URL is not set: started the embedded PostgreSQL');
  return {
    url: urlFor(port),
    port,
    dataDir: location.dataDir,
    started: true,
    close: () => closeUnlessShared(server, port, log),
    stop: () => server.stop(),
  };
}

function joined(location: Location, running: { pid: number; port: number }, options: EmbeddedDatabaseOptions, log: Logger, where: object): EmbeddedDatabase {
  if (options.port !== undefined && options.port !== running.port) {
    log.warn(
      { configuredPort: options.port, port: running.port },
      'the embedded PostgreSQL of this data directory already runs on another port than EMBEDDED_PG_PORT; using it there',
    );
  }
  log.info(
    { ...where, port: running.port, serverPid: running.pid },
    'DATABASE_URL is not set: joined the embedded PostgreSQL already running on this data directory (verified by its data_directory)',
  );
  return { url: urlFor(running.port), port: running.port, dataDir: location.dataDir, started: false, close: async () => {}, stop: async () => {} };
}

/**
 * The server recorded in our postmaster.pid, once it answers and reports our data directory.
 * A server still starting is waited for; one shutting down is waited out (then null).
 */
async function findOwnServer(dataDir: string): Promise<{ pid: number; port: number } | null> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const postmaster = await readPostmaster(dataDir);
    if (!postmaster) return null;
    const holder = await whoHolds(postmaster.port);
    if (holder.kind === 'postgres' && holder.dataDirectory && (await sameDirectory(holder.dataDirectory, dataDir))) {
      return { pid: postmaster.pid, port: postmaster.port };
    }
    if (postmaster.status === 'ready' || Date.now() > deadline) {
      // Alive and "ready" but not answering as ours: let PostgreSQL's own lock check explain it.
      return null;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function portTaken(port: number, holder: Exclude<Awaited<ReturnType<typeof whoHolds>>, { kind: 'free' }>, location: Location): EmbeddedDatabaseError {
  if (holder.kind === 'postgres') {
    return new EmbeddedDatabaseError(
      `Port ${port} is held by another PostgreSQL server (${holder.detail}), not this checkout's embedded database (${location.dataDir}); it was not used.`,
      'Set EMBEDDED_PG_PORT to a free port, stop that server, or set DATABASE_URL to use a PostgreSQL server on purpose.',
    );
  }
  return new EmbeddedDatabaseError(
    `Port ${port} is in use by another program, not PostgreSQL (${holder.detail}).`,
    'Set EMBEDDED_PG_PORT to a free port, stop that program, or set DATABASE_URL to use a PostgreSQL server.',
  );
}

async function isInitialised(dataDir: string): Promise<boolean> {
  return access(path.join(dataDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
}

async function ensureDatabase(port: number): Promise<void> {
  await withAdminClient(port, async (client) => {
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE_NAME]);
    if (existing.rowCount !== 0) return;
    // Two processes may create it at once: the loser's duplicate_database is fine.
    await client.query(`CREATE DATABASE ${DATABASE_NAME}`).catch((error: { code?: string }) => {
      if (error.code !== '42P04' && !isUniqueViolation(error)) throw error;
    });
  });
}

/** Leaves the server running while other processes (a worker, a second API) still use it. */
async function closeUnlessShared(server: ServerProcess, port: number, log: Logger): Promise<void> {
  const others = () =>
    withAdminClient(
      port,
      async (client) =>
        (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")).rows[0]!.n,
    ).catch(() => 0);
  // Connections this process just closed can take a moment to leave pg_stat_activity.
  let count = await others();
  for (let tries = 0; count > 0 && tries < 20; tries += 1) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    count = await others();
  }
  if (count > 0) {
    log.warn({ port, connections: count }, 'the embedded PostgreSQL is left running: other processes still use it (the next start joins it)');
    return;
  }
  await server.stop();
  log.info({ port }, 'stopped the embedded PostgreSQL');
}

function urlFor(port: number): string {
  return `postgres://${SUPERUSER.user}:${SUPERUSER.password}@127.0.0.1:${port}/${DATABASE_NAME}`;
}
