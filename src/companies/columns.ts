import { sql, type RawBuilder } from 'kysely';
import type { CompanyRow } from '../db/schema.js';
import { apiTimestamp } from '../db/sql.js';
import { tagsJsonOf, type StoredTag } from '../tags/columns.js';

// The one home of the company's shapes: what a company row holds besides its keys, and the
// company as a lead record embeds it.

/** A company's own columns, as intake writes them. */
export type CompanyDetails = Pick<CompanyRow, 'name' | 'domain' | 'industry' | 'size' | 'description' | 'status' | 'links' | 'emails' | 'phones' | 'locations'>;

/** The company columns a lead record embeds (`created_at` besides, formatted for the API). */
const RECORD_COLUMNS = ['id', 'name', 'industry', 'size', 'description', 'status', 'links'] as const;

/** The company as a lead record embeds it: links not yet split into website / linkedin_url. */
export type CompanyRecord = Pick<CompanyRow, (typeof RECORD_COLUMNS)[number] | 'created_at'> & { tags: StoredTag[] };

/**
 * The company row `companies` of workspace `workspaceId` (a value, not the row's column: Citus
 * routes the tags' subquery by it) as a lead record embeds it, with its tags (NULL when the join
 * found none).
 */
export const companyJson = (companies: string, workspaceId: RawBuilder<unknown>): RawBuilder<CompanyRecord | null> => {
  const column = (name: string) => sql.ref(`${companies}.${name}`);
  return sql`CASE WHEN ${column('id')} IS NULL THEN NULL ELSE json_build_object(
    ${sql.join(RECORD_COLUMNS.map((name) => sql`${sql.lit(name)}, ${column(name)}`))}, 'created_at', ${apiTimestamp(column('created_at'))},
    'tags', ${tagsJsonOf('company_tags', 'company_id', column('id'), workspaceId)}
  ) END`;
};
