import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import { ROOT } from './support.js';

// The Leads page's search on the large workspace (bench/README.md, `--only search`): each kind
// of term a person types (a word of a name, part of an email, a phone's digits, a company's
// domain), each request a different person's, and the plan of the list's statement for one
// term of each kind, to show which index serves it.

export interface SearchKind {
  name: string;
  /** The terms of this kind, one per request in turn. */
  terms: string[];
}

const TERMS_PER_KIND = 200;

/**
 * Terms for the people seed.ts seeds (numbered `from`..`to`: "Seed Person <n>",
 * seed<n>@seed<n % 1000>.example, phone 415 000 0000 + n) and the 500 companies the priming
 * creates (firm<k>.example, workloads.ts).
 */
export function searchKinds(from: number, to: number): SearchKind[] {
  const people = Array.from({ length: TERMS_PER_KIND }, () => from + Math.floor(Math.random() * (to - from + 1)));
  return [
    { name: 'a rare word of a name (the person number)', terms: people.map(String) },
    { name: 'a word of every seeded name ("Person")', terms: ['Person'] },
    { name: 'part of an email ("seed<n>@")', terms: people.map((n) => `seed${n}@`) },
    { name: "a phone's last 7 digits", terms: people.map((n) => String(4_150_000_000 + n).slice(-7)) },
    { name: 'a company domain ("firm<k>.example")', terms: people.map((n) => `firm${n % 500}.example`) },
  ];
}

/** EXPLAIN (ANALYZE, BUFFERS) of the console list's statement for `search` (the service's own builder from dist/). */
export async function explainSearch(pool: pg.Pool, workspaceId: number, search: string): Promise<string> {
  const { leadPageQuery } = (await import(pathToFileURL(path.join(ROOT, 'dist/src/leads/list-repository.js')).href)) as typeof import('../../src/leads/list-repository.js');
  // A Kysely over the bench's pool, only to compile the statement (it never ends the pool).
  const db = new Kysely<never>({ dialect: new PostgresDialect({ pool: { connect: () => pool.connect(), end: async () => {} } as unknown as pg.Pool }) });
  const compiled = leadPageQuery(db as never, workspaceId, { search, limit: 50 }).compile();
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${compiled.sql}`, [...compiled.parameters]);
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}
