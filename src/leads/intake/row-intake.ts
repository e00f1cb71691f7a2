import type { IntakeOptions } from './options.js';
import type { Executor } from '../../db/connect.js';
import { enqueue, type CompanyAnalyzeEvent } from '../../outbox/repository.js';
import { findTagsByNames, insertMissingTags } from '../../tags/repository.js';
import type { LeadRecord, LeadValues } from '../columns.js';
import { resolveCompany, type ResolvedCompany } from './company-resolution.js';
import { findIdentityMatches, type IdentityMatch, type IntakeLookup } from '../lookup-repository.js';
import { lookupForIntake } from './lookup.js';
import { nothingMatched, reportMatch, strongestMatch, type MatchReport, type StrongestMatch } from './match.js';
import { insertNewLead } from '../new-leads-repository.js';
import type { IdentityKey, PreparedLead } from './prepare.js';
import { DuplicateRejected, RowRejected } from './rejections.js';
import { deleteLeads, mergeIntoLeads, type LeadMerge } from '../write-repository.js';

// One lead row inside a transaction: matched, then created, updated or skipped.

export interface RowOutcome {
  status: 'created' | 'updated' | 'skipped';
  leadId: number;
  /** What matched the lead updated or skipped; nothing for a created one. */
  match: MatchReport;
  warnings: string[];
  /** Rows this call created besides the lead (a dry run reports them with a null id). */
  createdCompanyId: number | null;
  createdTagIds: number[];
  /** A created lead as stored (read back by the statement that wrote it), when the caller needs it. */
  record?: LeadRecord;
}

const MATCH_ATTEMPTS = 3;
const KIND_LABEL = { email: 'email', linkedin: 'LinkedIn profile', phone: 'phone number' } as const;

export interface References {
  tagIds: number[];
  missingTagNames: string[];
}

/** Checks of everything the payload points at (read by the lookup), before anything is written. */
export function checkReferences(lookup: IntakeLookup, lead: PreparedLead, options: IntakeOptions): References {
  const tags = lookup.tags;
  const company = lookup.companyById;
  const unknownIds = lead.tagIds.filter((id) => !tags.some((tag) => tag.id === id));
  if (unknownIds.length > 0) {
    throw new RowRejected('tag_ids', `The selected tag_ids are invalid: no tag with id ${unknownIds.join(', ')} exists in this workspace.`);
  }
  const wanted = new Set(lead.tagNames.map((name) => name.toLowerCase()));
  const named = tags.filter((tag) => wanted.has(tag.name.toLowerCase()));
  const known = new Set(named.map((tag) => tag.name.toLowerCase()));
  const missingTagNames = lead.tagNames.filter((name) => !known.has(name.toLowerCase()));
  if (missingTagNames.length > 0 && !options.createMissingTags) {
    throw new RowRejected('tags', `Unknown tag(s): ${missingTagNames.join(', ')}. Create them first, or send create_missing_tags: true.`);
  }
  if (lead.company?.id && !company) {
    throw new RowRejected('company.id', 'The selected company.id is invalid: no such company exists in this workspace.');
  }
  return { tagIds: [...new Set([...lead.tagIds, ...named.map((tag) => tag.id)])], missingTagNames };
}

/** The strongest match (see strongestMatch), and every lead the keys are held by. */
async function findMatch(db: Executor, workspaceId: number, identities: IdentityKey[], prefetched?: IdentityMatch[]) {
  const matches = prefetched ?? (await findIdentityMatches(db, workspaceId, identities));
  return { match: strongestMatch(identities, matches), matches };
}

async function createTags(db: Executor, workspaceId: number, names: string[]): Promise<{ ids: number[]; createdIds: number[] }> {
  if (names.length === 0) return { ids: [], createdIds: [] };
  const created = await insertMissingTags(db, workspaceId, names);
  const raced = created.length < names.length ? await findTagsByNames(db, workspaceId, names) : [];
  return { ids: [...new Set([...created, ...raced].map((tag) => tag.id))], createdIds: created.map((tag) => tag.id) };
}

/** The company and tags a created or updated lead gets, with the events their creation fires. */
interface Resolution {
  company: ResolvedCompany | null;
  tagIds: number[];
  createdTagIds: number[];
  events: CompanyAnalyzeEvent[];
}

async function resolve(db: Executor, workspaceId: number, lead: PreparedLead, lookup: IntakeLookup, references: References, options: IntakeOptions): Promise<Resolution> {
  const events: CompanyAnalyzeEvent[] = [];
  const company = lead.company ? await resolveCompany(db, workspaceId, lead.company, options.enrich, events, lookup) : null;
  const tags = await createTags(db, workspaceId, references.missingTagNames);
  return { company, tagIds: [...references.tagIds, ...tags.ids], createdTagIds: tags.createdIds, events };
}

/** The lead's own columns as the write repository takes them. */
export function leadValues(lead: PreparedLead, companyId: number | null): LeadValues {
  return {
    name: lead.name,
    ...lead.scalars,
    company_id: companyId,
    emails: lead.emails,
    phones: lead.phones,
    links: lead.links,
    locations: lead.location ? [lead.location] : [],
    custom_fields: lead.customFields,
  };
}

async function createLead(db: Executor, workspaceId: number, lead: PreparedLead, resolution: Resolution): Promise<RowOutcome | null> {
  const { complete, record } = await insertNewLead(db, workspaceId, {
    values: leadValues(lead, resolution.company?.id ?? null),
    keys: lead.identities,
    tagIds: resolution.tagIds,
    events: [...resolution.events, { topic: 'lead.created' }],
    trace: lead.trace,
  });
  if (!complete) {
    // A concurrent request created this person after our lookup: undo and match again.
    await deleteLeads(db, workspaceId, [record.id]);
    return null;
  }
  return {
    status: 'created',
    leadId: record.id,
    match: nothingMatched(),
    warnings: lead.warnings,
    createdCompanyId: resolution.company?.created ? resolution.company.id : null,
    createdTagIds: resolution.createdTagIds,
    record,
  };
}

/**
 * What updating the matched lead with a row writes (the merge statement's row), and the row's
 * warnings. Keys another lead already holds stay with that lead: they are not merged in here.
 */
export function mergeOfRow(
  match: StrongestMatch,
  lead: PreparedLead,
  matches: readonly IdentityMatch[],
  written: { companyId: number | null; tagIds: readonly number[]; events: readonly CompanyAnalyzeEvent[] },
): { merge: LeadMerge; warnings: string[] } {
  const { leadId } = match;
  const warnings = [...lead.warnings];
  const foreign = matches.filter((match) => match.lead_id !== leadId);
  const heldElsewhere = (kind: string, value: string) => foreign.some((match) => match.kind === kind && match.value === value);
  const emails = lead.emails.filter((email) => !heldElsewhere('email', email));
  const phones = lead.phones.filter((phone) => !lead.identities.some((key) => key.kind === 'phone' && key.label === phone && heldElsewhere('phone', key.value)));
  for (const match of foreign) {
    warnings.push(
      `${match.kind === 'email' ? 'emails' : match.kind === 'phone' ? 'phones' : 'linkedin_url'}: ${match.value} belongs to lead ${match.lead_id} and was not added to this lead.`,
    );
  }
  return {
    merge: {
      leadId,
      values: leadValues({ ...lead, emails, phones }, written.companyId),
      fillCompanyOnly: !lead.company?.explicit,
      keys: lead.identities.filter((key) => !heldElsewhere(key.kind, key.value)),
      tagIds: written.tagIds,
      events: written.events,
      trace: lead.trace,
    },
    warnings,
  };
}

/** The outcome of a row that updated its matched lead (read back as stored by the merge statement). */
export const updatedOutcome = (match: StrongestMatch, warnings: string[], record: LeadRecord, created: { companyId: number | null; tagIds: number[] }): RowOutcome => ({
  status: 'updated',
  leadId: match.leadId,
  match: reportMatch(match),
  warnings,
  createdCompanyId: created.companyId,
  createdTagIds: created.tagIds,
  record,
});

/** Updates the matched lead; null when it no longer exists (deleted since the match was read: match again). */
async function updateLead(
  db: Executor,
  workspaceId: number,
  match: StrongestMatch,
  lead: PreparedLead,
  matches: IdentityMatch[],
  resolution: Resolution,
): Promise<RowOutcome | null> {
  const { merge, warnings } = mergeOfRow(match, lead, matches, { companyId: resolution.company?.id ?? null, tagIds: resolution.tagIds, events: resolution.events });
  const [merged] = await mergeIntoLeads(db, workspaceId, [merge]);
  if (!merged) return null;
  const { ord: _ord, ...record } = merged;
  return updatedOutcome(match, warnings, record, { companyId: resolution.company?.created ? resolution.company.id : null, tagIds: resolution.createdTagIds });
}

/** A match under on_duplicate error or skip: rejected, or skipped without a write. Null for update. */
function settleWithoutUpdate(match: StrongestMatch, lead: PreparedLead, options: IntakeOptions): RowOutcome | null {
  const { leadId, identity } = match;
  if (options.onDuplicate === 'error') {
    throw new DuplicateRejected({ lead_id: leadId, ...reportMatch(match) }, `A lead with this ${KIND_LABEL[identity.kind]} (${identity.label}) already exists: lead ${leadId}.`);
  }
  if (options.onDuplicate === 'skip') {
    return { status: 'skipped', leadId, match: reportMatch(match), warnings: lead.warnings, createdCompanyId: null, createdTagIds: [] };
  }
  return null;
}

/**
 * Creates, updates or skips one lead inside the caller's transaction. Throws RowRejected or
 * DuplicateRejected for problems the caller reports; the caller rolls back (the transaction,
 * or the row's savepoint in a batch) so a rejected row leaves nothing behind.
 */
export async function intakeLead(db: Executor, workspaceId: number, lead: PreparedLead, options: IntakeOptions, prefetched?: IntakeLookup): Promise<RowOutcome> {
  const lookup = prefetched ?? (await lookupForIntake(db, workspaceId, lead));
  const references = checkReferences(lookup, lead, options);
  // Companies and tags are written only once a row is known to create or update a lead,
  // and only once even when a lost race sends the row round the loop again.
  let resolution: Resolution | null = null;
  const resolved = async () => (resolution ??= await resolve(db, workspaceId, lead, lookup, references, options));

  for (let attempt = 1; ; attempt += 1) {
    // The first attempt uses the lookup's matches; after a lost race, the keys are read again.
    const { match, matches } = await findMatch(db, workspaceId, lead.identities, attempt === 1 ? lookup.matches : undefined);
    if (match) {
      const settled = settleWithoutUpdate(match, lead, options);
      if (settled) return settled;
      const updated = await updateLead(db, workspaceId, match, lead, matches, await resolved());
      if (updated) return updated;
    } else {
      const created = await createLead(db, workspaceId, lead, await resolved());
      if (created) return created;
    }
    if (attempt >= MATCH_ATTEMPTS) throw new Error('lead identity kept changing under concurrent writes');
  }
}
