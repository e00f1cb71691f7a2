import type { Logger } from 'pino';
import { ConfigError } from './config.js';
import { isUnavailable, READ_ONLY_SQLSTATE } from './db/availability.js';
import { EmbeddedDatabaseError } from './db/embedded/start.js';

// What the long-running processes (`npm start`, `npm run worker`) do when something goes
// wrong outside a request or a worker step. README, "Failure behaviour", says the same.

/** Longest a shutdown after an uncaught exception may take before the process exits anyway. */
const FATAL_SHUTDOWN_MS = 15_000;

/**
 * The last line of defence, after every pool, client and loop handles its own errors:
 * - an uncaught exception leaves the process in an unknown state (Node's documentation:
 *   not safe to resume), so it is logged, in-flight work is finished as on SIGTERM, and the
 *   process exits with code 1 for its supervisor (docker, systemd, Kubernetes) to restart;
 * - an unhandled promise rejection is logged with its reason and the process carries on:
 *   the work that promise belonged to has already failed, and nothing else is left half done.
 */
function installLastResort(logger: Logger, shutdown: (reason: string, exitCode: number) => Promise<void>): void {
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled promise rejection: logged, the process carries on');
  });
  process.on('uncaughtException', (error, origin) => {
    logger.fatal({ err: error, origin }, 'uncaught exception: finishing in-flight work, then exiting with code 1 for the supervisor to restart the process');
    setTimeout(() => process.exit(1), FATAL_SHUTDOWN_MS).unref();
    shutdown('uncaughtException', 1).catch(() => process.exit(1));
  });
}

/**
 * How `npm start` and `npm run worker` live: `start` opens the process's parts; `stop` closes
 * those opened, in order, after a failed start as on SIGTERM, SIGINT or an uncaught exception
 * (once, `stopping` logged first), and the process exits. A failed start is rethrown for
 * describeStartupFailure.
 */
export async function runProcess(logger: Logger, parts: { stopping: string; start(): Promise<void>; stop(): Promise<void> }): Promise<void> {
  let stopping = false;
  const shutdown = async (reason: string, exitCode: number) => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, parts.stopping);
    await parts.stop();
    logger.info('stopped');
    process.exit(exitCode);
  };
  installLastResort(logger, shutdown);
  try {
    await parts.start();
  } catch (error) {
    await parts.stop().catch(() => {});
    throw error;
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  process.on('SIGINT', () => void shutdown('SIGINT', 0));
}

/** One or two sentences for a failed start; a stack trace only for what nobody foresaw. */
export function describeStartupFailure(error: unknown): string {
  if (error instanceof ConfigError || error instanceof EmbeddedDatabaseError) return error.message;
  const { code, message, syscall } = (typeof error === 'object' && error !== null ? error : {}) as { code?: string; message?: string; syscall?: string };
  if (syscall === 'listen' && code === 'EADDRINUSE')
    return `Cannot listen: ${message}. Set PORT (or METRICS_PORT, whichever it names) and HOST to a free address, or stop the process holding it.`;
  if (syscall === 'listen' && code === 'EACCES') return `Cannot listen: ${message} (ports below 1024 need privileges). Set PORT to another port.`;
  if (code === READ_ONLY_SQLSTATE)
    return `PostgreSQL is read-only (${message}): DATABASE_URL leads to a replica, such as a former primary after a failover. Point it at the primary (the cluster's read-write endpoint), or retry once the failover is over.`;
  if (isUnavailable(error)) return `Cannot reach PostgreSQL (${message}). Check DATABASE_URL and that the server runs, or unset DATABASE_URL to use the embedded database.`;
  if (code === '28P01' || code === '28000' || code === '3D000') return `PostgreSQL refused the connection: ${message}. Check the user, password and database name in DATABASE_URL.`;
  return `Failed to start: ${error instanceof Error ? error.stack : String(error)}`;
}
