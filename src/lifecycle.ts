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
export function installLastResort(logger: Logger, shutdown: (reason: string, exitCode: number) => Promise<void>): void {
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled promise rejection: logged, the process carries on');
  });
  process.on('uncaughtException', (error, origin) => {
    logger.fatal({ err: error, origin }, 'uncaught exception: finishing in-flight work, then exiting with code 1 for the supervisor to restart the process');
    setTimeout(() => process.exit(1), FATAL_SHUTDOWN_MS).unref();
    shutdown('uncaughtException', 1).catch(() => process.exit(1));
  });
}

/** One or two sentences for a failed start; a stack trace only for what nobody foresaw. */
export function describeStartupFailure(error: unknown): string {
  if (error instanceof ConfigError || error instanceof EmbeddedDatabaseError) return error.message;
  const { code, message, syscall } = (typeof error === 'object' && error !== null ? error : {}) as { code?: string; message?: string; syscall?: string };
  if (syscall === 'listen' && code === 'EADDRINUSE') return `Cannot listen: ${message}. Set PORT (or METRICS_PORT, whichever it names) and HOST to a free address, or stop the process holding it.`;
  if (syscall === 'listen' && code === 'EACCES') return `Cannot listen: ${message} (ports below 1024 need privileges). Set PORT to another port.`;
  if (code === READ_ONLY_SQLSTATE) return `PostgreSQL is read-only (${message}): DATABASE_URL leads to a replica, such as a former primary after a failover. Point it at the primary (the cluster's read-write endpoint), or retry once the failover is over.`;
  if (isUnavailable(error)) return `Cannot reach PostgreSQL (${message}). Check DATABASE_URL and that the server runs, or unset DATABASE_URL to use the embedded database.`;
  if (code === '28P01' || code === '28000' || code === '3D000') return `PostgreSQL refused the connection: ${message}. Check the user, password and database name in DATABASE_URL.`;
  return `Failed to start: ${error instanceof Error ? error.stack : String(error)}`;
}
