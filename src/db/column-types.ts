import type { ColumnType } from 'kysely';
import type { JsonbParameter } from './sql.js';

// How the row types read and write the database's column types.
// Timestamps are read as API-formatted strings (see connect.ts) and written as Date or SQL.
export type Timestamp = ColumnType<string, Date | string | undefined, Date | string>;
export type NullableTimestamp = ColumnType<string | null, Date | string | null | undefined, Date | string | null>;
/** A jsonb column, written only as text from jsonParameter (src/db/sql.ts). */
export type Json<T> = ColumnType<T, JsonbParameter, JsonbParameter>;
/** A jsonb column with a database default: optional on insert. */
export type JsonWithDefault<T> = ColumnType<T, JsonbParameter | undefined, JsonbParameter>;
