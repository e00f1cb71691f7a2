import type { MatchConflict } from '../../../generated/api.js';
import type { IdentityMatch, IntakeLookup } from '../lookup-repository.js';
import type { IdentityKey, PreparedLead } from './prepare.js';
import { DuplicateRejected, RowRejected } from './rejections.js';
import type { IntakeOptions, MatchReport, RowOutcome } from './write-request.js';

// The rules a row is judged by against what its lookup found, with no database: which existing
// lead its keys decide on (the match rule), whether what it refers to exists (references), and
// what a match does under on_duplicate. The planner (plan.ts) and a row alone both apply them.

/** The lead a payload matches, by the key that decided it, and the other leads its keys point at. */
export interface StrongestMatch {
  leadId: number;
  identity: IdentityKey;
  conflicts: MatchConflict[];
}

/**
 * The match rule: the lead of the strongest key held (emails in the order sent, then the
 * LinkedIn handle, then phones); every other lead some key is held by is a conflict, named
 * once, by its strongest key. Null when no key is held.
 */
export function strongestMatch(identities: readonly IdentityKey[], matches: readonly IdentityMatch[]): StrongestMatch | null {
  const leads: Array<{ leadId: number; identity: IdentityKey }> = [];
  for (const identity of identities) {
    const match = matches.find((candidate) => candidate.kind === identity.kind && candidate.value === identity.value);
    if (match && !leads.some((lead) => lead.leadId === match.lead_id)) leads.push({ leadId: match.lead_id, identity });
  }
  const [matched, ...others] = leads;
  if (!matched) return null;
  const conflicts = others.map(({ leadId, identity }) => ({ lead_id: leadId, matched_on: identity.label, kind: identity.kind }));
  return { ...matched, conflicts };
}

export const nothingMatched = (): MatchReport => ({ matched_on: null, match_kind: null, conflicts: [] });

export const reportMatch = (match: StrongestMatch) => ({ matched_on: match.identity.label, match_kind: match.identity.kind, conflicts: match.conflicts }) satisfies MatchReport;

/** The tags a row's lead gets that exist, and the names of those to create. */
export interface References {
  tagIds: number[];
  missingTagNames: string[];
}

/** Checks everything the payload points at (read by the lookup), before anything is written; throws RowRejected. */
export function checkReferences(lookup: IntakeLookup, lead: PreparedLead, options: IntakeOptions): References {
  const tags = lookup.tags;
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
  if (lead.company?.id && !lookup.companyById) {
    throw new RowRejected('company.id', 'The selected company.id is invalid: no such company exists in this workspace.');
  }
  return { tagIds: [...new Set([...lead.tagIds, ...named.map((tag) => tag.id)])], missingTagNames };
}

const KIND_LABEL = { email: 'email', linkedin: 'LinkedIn profile', phone: 'phone number' } as const;

/** The refusal of a row that matched under on_duplicate error (409 for POST /leads). */
export const duplicateRejection = ({ leadId, identity, ...match }: StrongestMatch): DuplicateRejected =>
  new DuplicateRejected(
    { lead_id: leadId, ...reportMatch({ leadId, identity, ...match }) },
    `A lead with this ${KIND_LABEL[identity.kind]} (${identity.label}) already exists: lead ${leadId}.`,
  );

/** A match under on_duplicate error or skip: rejected (DuplicateRejected), or skipped without a write. Null for update. */
export function settleWithoutUpdate(match: StrongestMatch, lead: PreparedLead, options: IntakeOptions): RowOutcome | null {
  const { leadId } = match;
  if (options.onDuplicate === 'error') throw duplicateRejection(match);
  if (options.onDuplicate === 'skip') {
    return { status: 'skipped', leadId, match: reportMatch(match), warnings: lead.warnings, createdCompanyId: null, createdTagIds: [] };
  }
  return null;
}
