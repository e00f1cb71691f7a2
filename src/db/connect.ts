import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { OutageLog } from './availability.js';
import { statementNameOf } from './prepared.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
export type Executor = Kysely<Database> | Transaction<Database>;

// Sessions run in UTC, so PostgreSQL prints timestamptz as `2026-11-22 15:04:05.123+00`;
// this turns that into the API's shape with exactly six fractional digits (PostgreSQL keeps
// microseconds, which a JS Date would truncate to milliseconds).
export function formatTimestamp(value: string): string {
  const match = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/.exec(value);
  if (!match) throw new Error(`unexpected timestamp format: ${value}`);
  return `${match[1]}T${match[2]}.${(match[3] ?? '').padEnd(6, '0')}Z`;
}

const TIMESTAMPTZ_OID = 1184;
const INT8_OID = 20;
pg.types.setTypeParser(TIMESTAMPTZ_OID, formatTimestamp);
// Ids and counts are int8; every value this service produces fits in a JS number.
pg.types.setTypeParser(INT8_OID, (value) => Number(value));

export interface PoolOptions {
  /** Where a lost connection is reported (once per outage). */
  logger: Logger;
  /** Names the pool in the log: `api`, `worker`, `cli`, ... */
  name: string;
  /**
   * For the outbound worker only: its commits (claims, attempt records, fan-out) do not
   * wait for the WAL flush. A database crash can then forget the last moments of that
   * bookkeeping, which re-sends a delivery under the same webhook-id but never loses one;
   * everything the API acknowledges is committed synchronously.
   */
  asynchronousCommit?: boolean;
  /**
   * Longest wait for a connection, whether a new one is being opened or every one is busy
   * (default CONNECT_TIMEOUT_MS). The API sets it below its 2 s answer budget.
   */
  connectTimeoutMs?: number;
  /** Server-side limit per statement (and per idle transaction); unset: none (the worker's long fan-out transactions). */
  statementTimeoutMs?: number;
}

/** Default longest wait for a pool connection: a stopped or unreachable server fails within it. */
export const CONNECT_TIMEOUT_MS = 5000;
/** TCP keepalive probes start after this much silence, so a peer that vanished is noticed. */
const KEEPALIVE_DELAY_MS = 10_000;

interface PoolHealth {
  outage: OutageLog;
  max: number;
  logger: Logger;
  lastExhaustedLog: number;
  timedOutWaits: number;
}
const health = new WeakMap<pg.Pool, PoolHealth>();
const EXHAUSTED_LOG_EVERY_MS = 60_000;

/**
 * A pool that survives the database going away: pg re-emits an idle connection's error
 * (a restart sends "terminating connection due to administrator command") on the pool,
 * which would crash the process without a listener. The pool drops that connection and
 * opens a new one on the next query, so recovery needs nothing but the listeners. Every
 * wait is bounded: opening a connection or waiting for a free one (connectTimeoutMs), a
 * statement (statementTimeoutMs), a silent peer (TCP keepalive).
 */
export function createPool(connectionString: string, max: number, options: PoolOptions): pg.Pool {
  const settings = [
    '-c TimeZone=UTC',
    ...(options.asynchronousCommit ? ['-c synchronous_commit=off'] : []),
    ...(options.statementTimeoutMs ? [`-c statement_timeout=${options.statementTimeoutMs}`, `-c idle_in_transaction_session_timeout=${options.statementTimeoutMs}`] : []),
  ].join(' ');
  const pool = new pg.Pool({
    connectionString,
    max,
    options: settings,
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  });
  const logger = options.logger.child({ pool: options.name });
  const outage = new OutageLog(logger, {
    down: 'PostgreSQL unreachable: queries fail until it is back (the API answers 503), then new connections are opened (logged once per outage)',
    up: 'PostgreSQL connection restored',
  });
  health.set(pool, { outage, max, logger, lastExhaustedLog: 0, timedOutWaits: 0 });
  pool.on('error', (error) => outage.failed(error));
  pool.on('connect', (client) => {
    // The pool listens to idle connections only: one checked out (by a transaction between
    // two statements, say) would raise its error unheard. Its next query fails instead, and
    // the pool drops it when it comes back.
    client.on('error', (error) => outage.failed(error));
    sendPreparedStatementsNamed(client);
    outage.recovered();
  });
  return pool;
}

/**
 * Kysely sends every statement as `query(text, values)`, unnamed: PostgreSQL parses and plans
 * it on every call. The texts of the prepared statements (db/prepared.ts) go out named
 * instead, so each connection parses them once and can reuse a plan.
 */
function sendPreparedStatementsNamed(client: pg.PoolClient): void {
  // The class's method, looked up on every call: whatever wraps it (the tests count
  // statements that way) still sees each statement.
  const prototype = Object.getPrototypeOf(client) as { query: (...args: unknown[]) => unknown };
  (client as { query: unknown }).query = (config: unknown, values?: unknown, callback?: unknown) => {
    const name = typeof config === 'string' && Array.isArray(values) && callback === undefined ? statementNameOf(config) : undefined;
    return name === undefined ? prototype.query.call(client, config, values, callback) : prototype.query.call(client, { name, text: config, values });
  };
}

/**
 * Reports a failure that `isUnavailable` classified, once per outage: a timeout waiting
 * for a connection while every connection of a full pool is busy is saturation (logged at
 * most once a minute, with how many waits timed out), anything else an outage of the
 * database, logged when it starts and when the next connection opens.
 */
export function reportUnavailable(pool: pg.Pool, error: unknown): void {
  const state = health.get(pool);
  if (!state) return;
  const waitedForBusyPool = isConnectTimeout(error) && pool.totalCount >= state.max && pool.idleCount === 0;
  if (!waitedForBusyPool || state.outage.isDown) {
    state.outage.failed(error);
    return;
  }
  state.timedOutWaits += 1;
  const now = Date.now();
  if (now - state.lastExhaustedLog < EXHAUSTED_LOG_EVERY_MS) return;
  state.logger.warn({ timedOutWaits: state.timedOutWaits, poolSize: state.max, waiting: pool.waitingCount },
    'PostgreSQL pool exhausted: every connection stayed busy longer than the connect timeout (overload, or the server stopped answering); such requests are answered 503 (logged at most once a minute)');
  state.lastExhaustedLog = now;
  state.timedOutWaits = 0;
}

const isConnectTimeout = (error: unknown) => error instanceof Error && /timeout exceeded when trying to connect/i.test(error.message);

export function createDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
