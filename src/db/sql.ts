import { sql, type Expression, type RawBuilder } from 'kysely';
import { storableValue } from '../storable-text.js';

// Timestamps nested inside json_build_object bypass the pg type parser, so they are
// formatted in SQL into the same API shape (UTC, six fractional digits, `Z`).
export function apiTimestamp(column: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** `column` followed by the values it lacks, first occurrence order kept, at most `max` entries. */
export function appendDistinct(column: string, values: readonly string[] | RawBuilder<string[]>, max: number): RawBuilder<string[]> {
  const added = Array.isArray(values) ? sql`${sql.val([...values])}::text[]` : values;
  // LIMIT, not an array slice: Citus's coordinator crashes deparsing an UPDATE whose SET takes a slice.
  return sql<string[]>`ARRAY(SELECT v FROM unnest(${sql.ref(column)} || ${added}) WITH ORDINALITY AS t(v, n) GROUP BY v ORDER BY min(n) LIMIT ${sql.lit(max)})`;
}

const sqlStateOf = (error: unknown): unknown => (typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined);

/** PostgreSQL refused a row because another one holds its unique key (SQLSTATE 23505). */
export const isUniqueViolation = (error: unknown): boolean => sqlStateOf(error) === '23505';

/** PostgreSQL refused a row whose foreign key names no row (SQLSTATE 23503). */
export const isForeignKeyViolation = (error: unknown): boolean => sqlStateOf(error) === '23503';

declare const jsonbParameter: unique symbol;
/** JSON text made by jsonParameter: the only thing a jsonb column or parameter takes. */
export type JsonbParameter = string & { readonly [jsonbParameter]: true };

/**
 * JSON text for a jsonb column or parameter, every jsonb write's one way in. jsonb refuses
 * `\u0000` and the escape of a lone surrogate (JSON.stringify writes both), so the text rule
 * of src/storable-text.ts is applied to every string in `value`, object keys included.
 */
export function jsonParameter(value: unknown): JsonbParameter {
  return JSON.stringify(storableValue(value)) as JsonbParameter;
}
