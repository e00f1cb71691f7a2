import { sql, type Expression, type RawBuilder } from 'kysely';

// Timestamps nested inside json_build_object bypass the pg type parser, so they are
// formatted in SQL into the same API shape (UTC, six fractional digits, `Z`).
export function apiTimestamp(column: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** `column` followed by the values it lacks, first occurrence order kept, at most `max` entries. */
export function appendDistinct(column: string, values: readonly string[], max: number): RawBuilder<string[]> {
  // LIMIT, not an array slice: Citus's coordinator crashes deparsing an UPDATE whose SET takes a slice.
  return sql<string[]>`ARRAY(SELECT v FROM unnest(${sql.ref(column)} || ${sql.val([...values])}::text[]) WITH ORDINALITY AS t(v, n) GROUP BY v ORDER BY min(n) LIMIT ${sql.lit(max)})`;
}

const sqlStateOf = (error: unknown): unknown => (typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined);

/** PostgreSQL refused a row because another one holds its unique key (SQLSTATE 23505). */
export const isUniqueViolation = (error: unknown): boolean => sqlStateOf(error) === '23505';

/** PostgreSQL refused a row whose foreign key names no row (SQLSTATE 23503). */
export const isForeignKeyViolation = (error: unknown): boolean => sqlStateOf(error) === '23503';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * JSON text for a jsonb parameter. PostgreSQL refuses the escape of a lone UTF-16 surrogate
 * (`"\ud800"`, which JSON.stringify writes for one), so such a code unit becomes U+FFFD, as it
 * does in a text parameter (pg sends those as UTF-8).
 */
export function jsonParameter(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'string' ? item.replace(LONE_SURROGATE, '\ufffd') : item));
}
