import { sql } from 'kysely';
import type { CompanyRecord } from '../companies/columns.js';
import type { LeadRow, LeadsTable } from '../db/schema.js';
import type { StoredTag } from '../tags/columns.js';

// The one home of the lead's column lists: what a payload sets, what the new-lead statement
// writes and what a lead record reads.

/** The lead's own text columns a payload may set (trimmed; a blank one counts as not sent). */
export const LEAD_TEXT_COLUMNS = ['job_title', 'description', 'gender', 'language'] as const;

/** The lead's own columns a payload may set besides its name and lists: on update, those sent overwrite. */
export const LEAD_SCALAR_COLUMNS = [...LEAD_TEXT_COLUMNS, 'decision_maker'] as const;
type LeadScalarColumn = (typeof LEAD_SCALAR_COLUMNS)[number];

/** The scalars a payload provided; absent ones are left alone. */
export type LeadScalars = { [Column in LeadScalarColumn]?: NonNullable<LeadRow[Column]> };

/** A lead's own columns as intake writes them (the statements add id, workspace, source, stage and timestamps). */
export type LeadValues = Pick<LeadRow, 'name' | 'company_id' | 'emails' | 'phones' | 'links' | 'locations' | 'custom_fields'> & LeadScalars;

/**
 * The columns of a new lead's row after id and workspace_id: the type each has in the
 * new-lead statement's row source `r` (the JSON of its LeadValues; null: a constant), and
 * the value it gets. `source` is 'api' unless the write says otherwise (an import's leads).
 */
export const NEW_LEAD_COLUMNS: ReadonlyArray<readonly [column: keyof LeadsTable, type: string | null, value: string]> = [
  ['company_id', 'bigint', 'r.company_id'],
  ['name', 'text', 'r.name'],
  ...LEAD_TEXT_COLUMNS.map((column) => [column, 'text', `r.${column}`] as const),
  ['decision_maker', 'boolean', 'coalesce(r.decision_maker, false)'],
  ['source', 'text', `coalesce(r.source, 'api')`],
  ['stage', null, `'new'`],
  ['chargeable', null, 'false'],
  ['emails', 'jsonb', 'ARRAY(SELECT jsonb_array_elements_text(r.emails))'],
  ['phones', 'jsonb', 'ARRAY(SELECT jsonb_array_elements_text(r.phones))'],
  ['links', 'jsonb', 'r.links'],
  ['locations', 'jsonb', 'r.locations'],
  ['custom_fields', 'jsonb', 'r.custom_fields'],
];

/** The lead columns of a lead record. */
const RECORD_COLUMNS = ['id', 'name', ...LEAD_SCALAR_COLUMNS, 'stage', 'source', 'emails', 'phones', 'links', 'locations', 'custom_fields', 'created_at', 'updated_at'] as const;

/** The lead as stored: every location (the API shows the first), its tags, its company as embedded. */
export type LeadRecord = Pick<LeadRow, (typeof RECORD_COLUMNS)[number]> & { tags: StoredTag[]; company: CompanyRecord | null };

/** The lead columns of a lead record, read from the row (or RETURNING of) `leads`. */
export const leadColumns = (leads: string) => sql.join(RECORD_COLUMNS.map((column) => sql.ref(`${leads}.${column}`)));

/** The scalar columns of a lead record, in their column order. */
export const leadScalarsOf = (record: Pick<LeadRow, LeadScalarColumn>) => pick(record, LEAD_SCALAR_COLUMNS);

function pick<Row, Column extends keyof Row>(row: Row, columns: readonly Column[]): Pick<Row, Column> {
  const picked = {} as Pick<Row, Column>;
  for (const column of columns) picked[column] = row[column];
  return picked;
}
