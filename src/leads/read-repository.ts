import { sql, type RawBuilder } from 'kysely';
import { companyJson } from '../companies/columns.js';
import type { Executor } from '../db/connect.js';
import { PreparedStatement } from '../db/prepared.js';
import { tagsJsonOf } from '../tags/columns.js';
import { leadColumns, type LeadRecord } from './columns.js';

const REPOSITORY = 'leads/read-repository';

// One round trip for the whole Lead output: the lead row, its tags, its company and the
// company's tags. Confined to the workspace so a foreign id reads exactly like a missing one;
// every table is matched on the workspace parameter itself, which is what Citus routes by.
export const LEAD_RECORDS = new PreparedStatement<{ workspaceId: number; ids: number[] }, LeadRecord>(
  { repository: REPOSITORY, name: 'LEAD_RECORDS' },
  (input) => sql`
  SELECT ${leadRecordOf('l', sql`${input.workspaceId}`)}
  FROM leads AS l
  WHERE l.workspace_id = ${input.workspaceId} AND l.id = ANY(${input.ids}::bigint[])
`,
);

/**
 * The Lead record's columns for the lead row `leads` of a statement: LEAD_RECORDS' select list,
 * and an UPDATE's RETURNING (which sees the row as written). The company is a subquery rather
 * than a join so that both can use it.
 */
export function leadRecordOf(leads: string, workspaceId: RawBuilder<unknown>) {
  return sql`${leadColumns(leads)},
    ${tagsJsonOf('lead_tags', 'lead_id', sql.ref(`${leads}.id`), workspaceId)} AS tags,
    (SELECT ${companyJson('c', workspaceId)} FROM companies AS c WHERE c.workspace_id = ${workspaceId} AND c.id = ${sql.ref(`${leads}.company_id`)}) AS company`;
}

export async function findLeadRecords(db: Executor, workspaceId: number, ids: readonly number[]): Promise<LeadRecord[]> {
  if (ids.length === 0) return [];
  return LEAD_RECORDS.execute(db, { workspaceId, ids: [...ids] });
}
