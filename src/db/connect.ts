import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
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

/**
 * `asynchronousCommit` is for the outbound worker only: its commits (claims, attempt records,
 * fan-out) do not wait for the WAL flush. A database crash can then forget the last moments
 * of that bookkeeping, which re-sends a delivery under the same webhook-id but never loses
 * one; everything the API acknowledges is committed synchronously.
 */
export function createPool(connectionString: string, max: number, options: { asynchronousCommit?: boolean } = {}): pg.Pool {
  const settings = `-c TimeZone=UTC${options.asynchronousCommit ? ' -c synchronous_commit=off' : ''}`;
  return new pg.Pool({ connectionString, max, options: settings });
}

export function createDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
