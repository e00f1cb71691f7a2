import type { Company, Lead, LinkType, Location } from '../../generated/api.js';
import type { LinkRow, LocationRow } from '../db/schema.js';
import type { CompanyJson, LeadRecord } from './read-repository.js';

const firstLink = (links: LinkRow[], type: string) => links.find((link) => link.type === type)?.url ?? null;

function presentLocation(locations: LocationRow[]): Location | null {
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

function presentCompany(company: CompanyJson): Company {
  return {
    id: company.id,
    name: company.name,
    website: firstLink(company.links, 'website'),
    linkedin_url: firstLink(company.links, 'linkedin'),
    industry: company.industry,
    size: company.size,
    description: company.description,
    status: company.status as Company['status'],
    tags: company.tags,
    created_at: company.created_at,
  };
}

export function presentLead(record: LeadRecord): Lead {
  return {
    id: record.id,
    name: record.name,
    job_title: record.job_title,
    description: record.description,
    gender: record.gender,
    language: record.language,
    decision_maker: record.decision_maker,
    stage: record.stage as Lead['stage'],
    source: record.source,
    emails: record.emails,
    phones: record.phones,
    links: record.links.map((link) => ({ type: link.type as LinkType, url: link.url })),
    location: presentLocation(record.locations),
    tags: record.tags,
    company: record.company ? presentCompany(record.company) : null,
    custom_fields: record.custom_fields,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}
