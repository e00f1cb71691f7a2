import type { Company, Lead, Location } from '../../generated/api.js';
import type { CompanyRecord } from '../companies/columns.js';
import type { StoredLocation } from '../db/schema.js';
import { firstLink } from '../links.js';
import { leadScalarsOf, type LeadRecord } from './columns.js';

function presentLocation(locations: StoredLocation[]): Location | null {
  const first = locations[0];
  if (!first) return null;
  return {
    country: first.country ?? null,
    state: first.state ?? null,
    city: first.city ?? null,
    address: first.address ?? null,
    zip_code: first.zip_code ?? null,
  };
}

function presentCompany(company: CompanyRecord): Company {
  return {
    id: company.id,
    name: company.name,
    website: firstLink(company.links, 'website'),
    linkedin_url: firstLink(company.links, 'linkedin'),
    industry: company.industry,
    size: company.size,
    description: company.description,
    status: company.status,
    tags: company.tags,
    created_at: company.created_at,
  };
}

export function presentLead(record: LeadRecord): Lead {
  return {
    id: record.id,
    name: record.name,
    ...leadScalarsOf(record),
    stage: record.stage,
    source: record.source,
    emails: record.emails,
    phones: record.phones,
    // jsonb keeps an object's keys shortest first (`url` before `type`): list them as the document does.
    links: record.links.map(({ type, url }) => ({ type, url })),
    location: presentLocation(record.locations),
    tags: record.tags,
    company: record.company ? presentCompany(record.company) : null,
    custom_fields: record.custom_fields,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}
