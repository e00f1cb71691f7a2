import type { Logger } from 'pino';

// Socket-level failures and the SQLSTATEs PostgreSQL sends when it goes away, is not back
// yet or takes no more connections: a restart, a failover, a stopped server, every
// connection slot taken (53300), a connection error (class 08), and a write reaching a
// server that is read-only (25006): after a failover the old primary can come back as a
// replica with connections still open to it, or a provider turns a server read-only (a
// full disk). The service never opens a read-only transaction itself, so 25006 always
// means "this is not the primary (any more)". Anything else is a real error.
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
export const READ_ONLY_SQLSTATE = '25006';
const SHUTDOWN_STATES = new Set(['57P01', '57P02', '57P03', '53300', READ_ONLY_SQLSTATE]);
const CLIENT_MESSAGES = /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Connection is closed/i;

/** True when `error` means "the database (or Redis) is not reachable right now", not a bug. */
export function isUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || SHUTDOWN_STATES.has(code) || code.startsWith('08'))) return true;
  if (typeof message === 'string' && CLIENT_MESSAGES.test(message)) return true;
  // Node reports a refused connection to every address of a host as an AggregateError.
  return Array.isArray(errors) && errors.some(isUnavailable);
}

/**
 * Logs an outage once, when it starts, and once more when it ends, however many failures
 * arrive in between (every idle connection of a pool, every poll of a worker loop).
 */
export class OutageLog {
  private downSince: number | null = null;
  private failures = 0;

  constructor(
    private readonly logger: Logger,
    private readonly messages: { down: string; up: string },
  ) {}

  get isDown(): boolean {
    return this.downSince !== null;
  }

  failed(error: unknown, fields: Record<string, unknown> = {}): void {
    this.failures += 1;
    if (this.downSince !== null) return;
    this.downSince = Date.now();
    this.logger.error({ err: error, ...fields }, this.messages.down);
  }

  /**
   * `startedAt`: when the work that just succeeded began. Work begun before the outage was
   * noticed (a query finishing as the server stops) proves nothing about recovery.
   */
  recovered(startedAt = Date.now()): void {
    if (this.downSince === null || startedAt <= this.downSince) return;
    this.logger.info({ downForMs: Date.now() - this.downSince, failures: this.failures }, this.messages.up);
    this.downSince = null;
    this.failures = 0;
  }
}
