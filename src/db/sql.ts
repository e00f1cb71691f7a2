import { sql, type Expression, type RawBuilder } from 'kysely';

// Timestamps nested inside json_build_object bypass the pg type parser, so they are
// formatted in SQL into the same API shape (UTC, six fractional digits, `Z`).
export function apiTimestamp(column: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** `column` followed by the values it lacks, first occurrence order kept, at most `max` entries. */
export function appendDistinct(column: string, values: readonly string[], max: number): RawBuilder<string[]> {
  return sql<string[]>`(ARRAY(SELECT v FROM unnest(${sql.ref(column)} || ${sql.val([...values])}::text[]) WITH ORDINALITY AS t(v, n) GROUP BY v ORDER BY min(n)))[1:${sql.lit(max)}]`;
}
