import { stringify } from 'csv-stringify/sync';
import type { Lead } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
import { customFieldKeys, listLeadPage, type LeadListFilter } from './list-repository.js';
import { loadLeads } from './read-service.js';

// The lead list (the console's Leads page, `lead list`) as CSV or JSON, every page of it: read
// a page at a time through the list's keyset and written out before the next is read, so the
// process holds one page however many leads match.

const EXPORT_PAGE = 500;

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

const joined = (values: readonly string[]) => values.join('; ');

function cellsOf(lead: Lead): string[] {
  const linkedin = lead.links.find((link) => link.type === 'linkedin')?.url ?? '';
  const { location, company } = lead;
  return [
    String(lead.id),
    lead.name,
    joined(lead.emails),
    joined(lead.phones),
    linkedin,
    lead.job_title ?? '',
    lead.stage,
    lead.source,
    joined(lead.tags.map((tag) => tag.name)),
    location?.country ?? '',
    location?.state ?? '',
    location?.city ?? '',
    company?.name ?? '',
    company?.website ?? '',
    company?.industry ?? '',
    company?.size ?? '',
    lead.created_at,
    lead.updated_at,
  ];
}

/** Every matching lead as the API reads it, newest first, a page at a time. */
export async function* matchingLeads(db: Executor, workspaceId: number, filter: LeadExportFilter): AsyncGenerator<Lead[]> {
  for (let before: number | undefined; ; ) {
    const page = await listLeadPage(db, workspaceId, { ...filter, before, limit: EXPORT_PAGE });
    const leads = await loadLeads(
      db,
      page.leads.map((lead) => ({ id: lead.id, workspace_id: workspaceId })),
    );
    yield page.leads.flatMap((lead) => leads.get(lead.id) ?? []);
    if (page.next === null) return;
    before = page.next;
  }
}

/** The CSV: one row per lead, emails and phones joined, tags by name, then a column per custom field key. */
export async function* leadsCsv(db: Executor, workspaceId: number, filter: LeadExportFilter): AsyncGenerator<string> {
  const keys = await customFieldKeys(db, workspaceId);
  yield stringify([[...COLUMNS, ...keys.map((key) => `custom_fields.${key}`)]], { bom: true });
  for await (const leads of matchingLeads(db, workspaceId, filter)) {
    if (leads.length > 0) yield stringify(leads.map((lead) => [...cellsOf(lead), ...keys.map((key) => lead.custom_fields[key] ?? '')]));
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
