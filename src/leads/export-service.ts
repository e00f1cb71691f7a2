import { stringify } from 'csv-stringify/sync';
import type { Lead } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
import { CELL_LIST_SEPARATOR, customFieldKeys, listLeadExportPage, type LeadExportRow } from './export-repository.js';
import { listTags } from '../tags/repository.js';
import { listLeadPage, type LeadListFilter } from './list-repository.js';
import { loadLeads } from './read-service.js';

// The lead list (the console's Leads page, `lead list`) as CSV or JSON, every page of it: read
// a page at a time through the list's keyset and written out before the next is read, so the
// process holds one page however many leads match. The CSV reads its cells in the page's own
// statement; the JSON reads each lead as GET /leads/{id} gives it.

const EXPORT_PAGE = 500;
/**
 * CSV rows written at a time: each write (its string, the Buffer the socket sends) stays a few
 * dozen kB whatever a page's rows hold, and the socket's backpressure is felt every few rows.
 */
const CSV_ROWS_PER_WRITE = 100;

export type LeadExportFilter = Omit<LeadListFilter, 'before' | 'limit'>;

const COLUMNS = [
  'id',
  'name',
  'emails',
  'phones',
  'linkedin_url',
  'job_title',
  'stage',
  'source',
  'tags',
  'location.country',
  'location.state',
  'location.city',
  'company.name',
  'company.website',
  'company.industry',
  'company.size',
  'created_at',
  'updated_at',
] as const;

/**
 * The names of the workspace's tags by id, and each one's place in tag order: read once per
 * export, and again when a page names a tag created since.
 */
class TagNames {
  private byId = new Map<number, { name: string; rank: number }>();

  constructor(
    private readonly db: Executor,
    private readonly workspaceId: number,
  ) {}

  async load(): Promise<this> {
    const tags = await listTags(this.db, this.workspaceId, true);
    this.byId = new Map(tags.map((tag, rank) => [Number(tag.id), { name: tag.name, rank }]));
    return this;
  }

  /** The page's rows with their tag ids (`3,7`) as the names joined in tag order. */
  async name(rows: readonly LeadExportRow[]): Promise<string[]> {
    const ids = rows.map((row) => (row.tag_ids === '' ? [] : row.tag_ids.split(',').map(Number)));
    if (ids.some((lead) => lead.some((id) => !this.byId.has(id)))) await this.load();
    return ids.map((lead) => {
      const tags = lead.flatMap((id) => this.byId.get(id) ?? []);
      return joined(tags.sort((a, b) => a.rank - b.rank).map((tag) => tag.name));
    });
  }
}

const joined = (values: readonly string[]) => values.join(CELL_LIST_SEPARATOR);

/** A lead's cells in COLUMNS' order: the lists joined and absent values empty, by the export's statement. */
function cellsOf(row: LeadExportRow, tags: string): string[] {
  return [
    String(row.id),
    row.name,
    row.emails,
    row.phones,
    row.linkedin_url,
    row.job_title,
    row.stage,
    row.source,
    tags,
    row.country,
    row.state,
    row.city,
    row.company_name,
    row.company_website,
    row.company_industry,
    row.company_size,
    row.created_at,
    row.updated_at,
  ];
}

/** Every page of the list through its keyset, newest first: `read` reads the page before a lead id (the first page: undefined). */
async function* everyPage<Row>(read: (before: number | undefined) => Promise<{ rows: Row[]; next: number | null }>): AsyncGenerator<Row[]> {
  for (let before: number | undefined; ; ) {
    const page = await read(before);
    yield page.rows;
    if (page.next === null) return;
    before = page.next;
  }
}

/** Every matching lead as the API reads it, newest first, a page at a time. */
export async function* matchingLeads(db: Executor, workspaceId: number, filter: LeadExportFilter): AsyncGenerator<Lead[]> {
  for await (const page of everyPage((before) => listLeadPage(db, workspaceId, { ...filter, before, limit: EXPORT_PAGE }))) {
    const leads = await loadLeads(
      db,
      page.map((lead) => ({ id: lead.id, workspace_id: workspaceId })),
    );
    yield page.flatMap((lead) => leads.get(lead.id) ?? []);
  }
}

/** The CSV: one row per lead, emails and phones joined, tags by name, then a column per custom field key. */
export async function* leadsCsv(db: Executor, workspaceId: number, filter: LeadExportFilter): AsyncGenerator<string> {
  const keys = await customFieldKeys(db, workspaceId);
  const tagNames = await new TagNames(db, workspaceId).load();
  yield stringify([[...COLUMNS, ...keys.map((key) => `custom_fields.${key}`)]], { bom: true });
  for await (const page of everyPage((before) => listLeadExportPage(db, workspaceId, { ...filter, before, limit: EXPORT_PAGE }))) {
    const tags = await tagNames.name(page);
    for (let first = 0; first < page.length; first += CSV_ROWS_PER_WRITE) {
      const rows = page.slice(first, first + CSV_ROWS_PER_WRITE);
      yield stringify(rows.map((row, index) => [...cellsOf(row, tags[first + index]!), ...keys.map((key) => row.custom_fields[key] ?? '')]));
    }
  }
}

/** The JSON: one array (one line, as every CLI command prints one JSON value) of the leads as GET /leads/{id} gives each, written a page at a time. */
export async function* leadsJson(db: Executor, workspaceId: number, filter: LeadExportFilter): AsyncGenerator<string> {
  let first = true;
  yield '[';
  for await (const leads of matchingLeads(db, workspaceId, filter)) {
    for (const lead of leads) {
      yield `${first ? '' : ','}${JSON.stringify(lead)}`;
      first = false;
    }
  }
  yield ']\n';
}
