import type { CompanyInput, LeadFields, LeadInput, Link, Location, LocationInput } from '../../../generated/api.js';
import type { IdentityKind } from '../../db/schema.js';
import { websiteLinkOfDomain } from '../../companies/rules.js';
import { CUSTOM_FIELD_KEY_MAX_LENGTH, MAX_EMAILS, MAX_PHONES } from '../../limits.js';
import { businessDomainOfEmail, domainOfUrl, linkedinHandle, normalizeEmail, normalizePhone, phoneMatchKey, slugifyKey } from '../../normalize.js';
import { LEAD_TEXT_COLUMNS, type LeadScalars } from '../columns.js';

export interface IdentityKey {
  kind: IdentityKind;
  value: string;
  /** What a caller recognizes in `matched_on`: the address, the LinkedIn URL sent, the phone digits. */
  label: string;
}

export interface PreparedCompany {
  id: number | null;
  name: string | null;
  /**
   * The registrable domain that decides the company: company.website's when it has one,
   * else the business domain of the person's first email that has one (free-mail never counts).
   */
  domain: string | null;
  /** The domain came from an email, not from company.website. */
  domainFromEmail: boolean;
  links: Link[];
  industry: string | null;
  size: string | null;
  description: string | null;
  emails: string[];
  phones: string[];
  location: Location | null;
  /** The payload carried a `company` object (an explicit statement about the employer). */
  explicit: boolean;
}

export interface PreparedLead {
  name: string;
  /** Scalars the payload provided; on update they overwrite, absent ones are left alone. */
  scalars: LeadScalars;
  emails: string[];
  phones: string[];
  links: Link[];
  location: Location | null;
  customFields: Record<string, string>;
  tagNames: string[];
  tagIds: number[];
  /** Strongest first: emails in the order sent, the LinkedIn handle, phones in the order sent. */
  identities: IdentityKey[];
  company: PreparedCompany | null;
  warnings: string[];
  /** The trace context of the request it came in (stored with the lead's events); absent untraced. */
  trace?: string | null;
  /** How it came in when not through the API (see Caller's leadSource). */
  source?: 'import';
}

// Every input field and what prepareLead makes of it, typed from the generated schemas that
// both POST /leads and each batch row use: a property added to LeadFields or CompanyInput in
// openapi/openapi.yaml fails the typecheck here, naming it, until it is handled below and
// listed here (README, "Changing the contract"). test/leads/input-fields.test.ts checks that
// each listed field really changes the listed parts of the prepared lead.
export const LEAD_FIELD_TARGETS = {
  name: ['name'],
  email: ['emails', 'identities', 'company'],
  phone: ['phones', 'identities'],
  linkedin_url: ['links', 'identities'],
  emails: ['emails', 'identities', 'company'],
  phones: ['phones', 'identities'],
  links: ['links'],
  job_title: ['scalars'],
  description: ['scalars'],
  gender: ['scalars'],
  language: ['scalars'],
  decision_maker: ['scalars'],
  custom_fields: ['customFields'],
  location: ['location'],
  tags: ['tagNames'],
  tag_ids: ['tagIds'],
  company: ['company'],
} as const satisfies { [Field in keyof LeadFields]-?: ReadonlyArray<keyof PreparedLead> };

export const COMPANY_FIELD_TARGETS = {
  id: ['id'],
  name: ['name'],
  website: ['domain', 'links'],
  linkedin_url: ['links'],
  industry: ['industry'],
  size: ['size'],
  description: ['description'],
  emails: ['emails'],
  phones: ['phones'],
  location: ['location'],
} as const satisfies { [Field in keyof CompanyInput]-?: ReadonlyArray<keyof PreparedCompany> };

const unique = <T>(values: T[]): T[] => [...new Set(values)];

function uniqueIgnoringCase(values: string[]): string[] {
  const seen = new Set<string>();
  return values.filter((value) => !seen.has(value.toLowerCase()) && seen.add(value.toLowerCase()));
}

function prepareLocation(input: LocationInput | undefined): Location | null {
  if (!input) return null;
  const location: Location = {
    country: input.country?.trim() || null,
    state: input.state?.trim() || null,
    city: input.city?.trim() || null,
    address: input.address?.trim() || null,
    zip_code: input.zip_code?.trim() || null,
  };
  return Object.values(location).some((part) => part !== null) ? location : null;
}

function prepareCustomFields(input: LeadInput['custom_fields'], warnings: string[]): Record<string, string> {
  // Keys are client input: without a prototype no key (not even `__proto__`) can reach one.
  const fields: Record<string, string> = Object.create(null);
  for (const [rawKey, value] of Object.entries(input ?? {})) {
    // A slug can be longer than the key (`₹` is `indian_rupee`): it is cut to the keys' limit.
    const key = slugifyKey(rawKey).slice(0, CUSTOM_FIELD_KEY_MAX_LENGTH).replace(/_+$/, '');
    if (!key) {
      warnings.push(`custom_fields: the key "${rawKey}" has no letters or digits and was dropped.`);
    } else if (typeof value === 'boolean') {
      fields[key] = value ? 'yes' : 'no';
    } else if (typeof value === 'string' || typeof value === 'number') {
      fields[key] = String(value);
    } else if (value !== null && typeof value === 'object') {
      warnings.push(`custom_fields.${key}: objects and arrays are not stored; the value was dropped.`);
    }
  }
  return fields;
}

function capped<T>(values: T[], max: number, field: string, warnings: string[]): T[] {
  if (values.length <= max) return values;
  warnings.push(`${field}: only the first ${max} values are kept; ${values.length - max} dropped.`);
  return values.slice(0, max);
}

function prepareCompany(input: CompanyInput | undefined, personEmails: string[]): PreparedCompany | null {
  const websiteDomain = input?.website ? domainOfUrl(input.website) : null;
  const domain = websiteDomain ?? personEmails.map(businessDomainOfEmail).find((found) => found !== null) ?? null;
  const name = input?.name?.trim() || null;
  if (!input?.id && !domain && !name) return null;
  const links: Link[] = [];
  if (input?.website) links.push({ type: 'website', url: input.website });
  if (input?.linkedin_url) links.push({ type: 'linkedin', url: input.linkedin_url });
  return {
    id: input?.id ?? null,
    name,
    domain,
    domainFromEmail: websiteDomain === null && domain !== null,
    links,
    industry: input?.industry?.trim() || null,
    size: input?.size?.trim() || null,
    description: input?.description?.trim() || null,
    emails: unique((input?.emails ?? []).map(normalizeEmail)).slice(0, MAX_EMAILS),
    phones: unique((input?.phones ?? []).map(normalizePhone).filter((phone): phone is string => phone !== null)).slice(0, MAX_PHONES),
    location: prepareLocation(input?.location),
    explicit: input !== undefined,
  };
}

/** Everything about a lead payload that needs no database: normalization, merging, caps, match keys. */
export function prepareLead(input: LeadInput): PreparedLead {
  const warnings: string[] = [];
  const emails = capped(unique([input.email, ...(input.emails ?? [])].filter((email): email is string => !!email).map(normalizeEmail)), MAX_EMAILS, 'emails', warnings);
  // Numbers under 7 digits are discarded without a warning, as the spec requires.
  const phones = capped(
    unique(
      [input.phone, ...(input.phones ?? [])]
        .filter((phone): phone is string => !!phone)
        .map(normalizePhone)
        .filter((phone): phone is string => phone !== null),
    ),
    MAX_PHONES,
    'phones',
    warnings,
  );

  const links: Link[] = [];
  if (input.linkedin_url) links.push({ type: 'linkedin', url: input.linkedin_url });
  for (const link of input.links ?? []) {
    if (!links.some((existing) => existing.url === link.url)) links.push({ type: link.type, url: link.url });
  }

  const handle = input.linkedin_url ? linkedinHandle(input.linkedin_url) : null;
  if (input.linkedin_url && !handle) warnings.push('linkedin_url: not a LinkedIn profile URL (/in/<handle>); it is stored but not used for matching.');

  const identities: IdentityKey[] = [
    ...emails.map((email) => ({ kind: 'email' as const, value: email, label: email })),
    ...(handle ? [{ kind: 'linkedin' as const, value: handle, label: input.linkedin_url! }] : []),
    ...unique(phones.map(phoneMatchKey)).map((key) => ({ kind: 'phone' as const, value: key, label: phones.find((phone) => phoneMatchKey(phone) === key)! })),
  ];

  const scalars: LeadScalars = {};
  for (const field of LEAD_TEXT_COLUMNS) {
    const value = input[field]?.trim();
    if (value) scalars[field] = value;
  }
  if (input.decision_maker !== undefined) scalars.decision_maker = input.decision_maker;

  return {
    name: input.name.trim() || input.name,
    scalars,
    emails,
    phones,
    links,
    location: prepareLocation(input.location),
    customFields: prepareCustomFields(input.custom_fields, warnings),
    tagNames: uniqueIgnoringCase((input.tags ?? []).map((tag) => tag.trim()).filter(Boolean)),
    tagIds: unique(input.tag_ids ?? []),
    identities,
    company: prepareCompany(input.company, emails),
    warnings,
  };
}

/** What the payload says about the company besides how to find it. */
export function companyDetails(company: PreparedCompany) {
  return {
    name: company.name,
    industry: company.industry,
    size: company.size,
    description: company.description,
    links: company.links,
    emails: company.emails,
    phones: company.phones,
    locations: company.location ? [company.location] : [],
  };
}

/** The links a company the row creates is given: one built from an email's domain gets that domain's site as its website. */
export function newCompanyLinks(company: PreparedCompany): Link[] {
  return company.domainFromEmail && company.domain !== null ? [websiteLinkOfDomain(company.domain), ...company.links] : company.links;
}

/** True when the payload carries company details to fill in (not only a way to find the company). */
export function companyHasDetails(company: PreparedCompany): boolean {
  return Object.values(companyDetails(company)).some((value) => (Array.isArray(value) ? value.length > 0 : value !== null));
}
