import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { OutageLog, READ_ONLY_SQLSTATE } from './availability.js';
import type { Database } from './schema.js';
import { sessionName } from './session-name.js';
import { statementNameOf } from './statement-names.js';

export type Db = Kysely<Database>;
export type Executor = Kysely<Database> | Transaction<Database>;

// Sessions run in UTC, so PostgreSQL prints timestamptz as `2026-11-22 15:04:05.123+00`
// (and JSON as `2026-11-22T15:04:05.123+00:00`); this turns that into the API's shape with
// exactly six fractional digits (PostgreSQL keeps microseconds, which a JS Date would truncate
// to milliseconds).
export function formatTimestamp(value: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00(?::00)?$/.exec(value);
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
  /** Names the pool in the log and its sessions in PostgreSQL (sessionName): `api`, `worker`, `cli`, ... */
  name: string;
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
  retireAll: () => void;
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
    // On Citus a SET LOCAL (the Idempotency-Key claim's lock_timeout) must reach the worker
    // nodes, where the row lock is waited for; plain PostgreSQL keeps it as an unused setting.
    '-c citus.propagate_set_commands=local',
    // No JIT: it starts on a plan's cost estimate, and a set statement over JSON rows (whose count
    // the planner cannot see, so it takes a hundred) is estimated far above what it costs; the
    // compile then takes tens of milliseconds for a statement that runs in one.
    '-c jit=off',
    ...(options.statementTimeoutMs ? [`-c statement_timeout=${options.statementTimeoutMs}`, `-c idle_in_transaction_session_timeout=${options.statementTimeoutMs}`] : []),
  ].join(' ');
  const pool = new pg.Pool({
    connectionString,
    max,
    application_name: sessionName(options.name),
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
  const { watch, retireAll } = retireOnReadOnly(pool);
  health.set(pool, { outage, max, logger, lastExhaustedLog: 0, timedOutWaits: 0, retireAll });
  pool.on('error', (error) => outage.failed(error));
  pool.on('connect', (client) => {
    // The pool listens to idle connections only: one checked out (by a transaction between
    // two statements, say) would raise its error unheard. Its next query fails instead, and
    // the pool drops it when it comes back.
    client.on('error', (error) => outage.failed(error));
    sendPreparedStatementsNamed(client);
    watch(client);
    outage.recovered();
  });
  return pool;
}

/**
 * A connection answering 25006 is open to a server that is now read-only: a primary turned
 * replica after a failover, which keeps its sessions instead of dropping them. The pool
 * would hand it out again and again, so every connection opened until then is retired:
 * idle ones at once, checked-out ones when they come back (their transaction rolls back
 * first). The next request opens a new connection, which the endpoint (HAProxy, a managed
 * service's DNS name) sends to the new primary. `watch` hooks each new connection.
 */
function retireOnReadOnly(pool: pg.Pool): { watch: (client: pg.PoolClient) => void; retireAll: () => void } {
  const open = new Set<pg.PoolClient>();
  const retired = new WeakSet<pg.PoolClient>();
  pool.on('remove', (client) => open.delete(client as pg.PoolClient));
  // pg-pool ends a released connection that is ending; this is how it retires one of its own.
  pool.on('release', (_error: Error | undefined, client: pg.PoolClient) => {
    if (retired.has(client)) void client.end();
  });
  const retireAll = () => {
    for (const client of open) {
      if (retired.has(client)) continue;
      retired.add(client);
      // pg-pool listens for errors on idle connections only and removes one that reports
      // an error; a checked-out one just logs it through the connection's own listener.
      client.emit('error', Object.assign(new Error('connection retired: its server answered as read-only (25006)'), { code: READ_ONLY_SQLSTATE }));
    }
  };
  const watch = (client: pg.PoolClient) => {
    open.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    const noticed = (error: unknown) => {
      if ((error as { code?: unknown } | null)?.code === READ_ONLY_SQLSTATE) retireAll();
    };
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const callback = args.at(-1);
      if (typeof callback === 'function') {
        args[args.length - 1] = (error: unknown, ...rest: unknown[]) => {
          noticed(error);
          return (callback as (...values: unknown[]) => unknown)(error, ...rest);
        };
        return query(...args);
      }
      const result = query(...args);
      if (result instanceof Promise) result.catch(noticed);
      return result;
    };
  };
  return { watch, retireAll };
}

/**
 * Whether the pool's connections lead to a primary that takes writes; when they do not (a
 * replica, a server made read-only), every connection opened so far is retired as after a
 * 25006. For readiness, which only reads: without this, a pool whose writes stopped
 * arriving (its load balancer heeding readiness) would keep its read-only connections.
 */
export async function writable(pool: pg.Pool): Promise<boolean> {
  const { rows } = await pool.query<{ read_only: boolean }>("SELECT current_setting('transaction_read_only') = 'on' AS read_only");
  if (!rows[0]!.read_only) return true;
  health.get(pool)?.retireAll();
  return false;
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
  state.logger.warn(
    { timedOutWaits: state.timedOutWaits, poolSize: state.max, waiting: pool.waitingCount },
    'PostgreSQL pool exhausted: every connection stayed busy longer than the connect timeout (overload, or the server stopped answering); such requests are answered 503 (logged at most once a minute)',
  );
  state.lastExhaustedLog = now;
  state.timedOutWaits = 0;
}

const isConnectTimeout = (error: unknown) => error instanceof Error && /timeout exceeded when trying to connect/i.test(error.message);

export function createDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
