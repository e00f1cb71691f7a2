import type { ColumnType } from 'kysely';

// How the row types read and write the database's column types.
// Timestamps are read as API-formatted strings (see connect.ts) and written as Date or SQL.
export type Timestamp = ColumnType<string, Date | string | undefined, Date | string>;
export type NullableTimestamp = ColumnType<string | null, Date | string | null | undefined, Date | string | null>;
export type Json<T> = ColumnType<T, string, string>;
/** A jsonb column with a database default: optional on insert, written as JSON text. */
export type JsonWithDefault<T> = ColumnType<T, string | undefined, string>;
