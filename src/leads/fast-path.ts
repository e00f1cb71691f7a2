import type { Executor } from '../db/connect.js';
import { companyHasDetails } from './company-resolution.js';
import { lookupForIntake, type IntakeLookup, type MatchKey } from './lookup.js';
import type { PreparedLead } from './prepare.js';
import { checkReferences, findMatch, leadValues, settleWithoutUpdate, type IntakeOptions, type RowOutcome } from './row-intake.js';
import { insertNewLeadIfKeysFree } from './write-repository.js';

// The fast path of lead intake: a row that certainly creates a new person is written by the
// set-based new-lead statement, without the per-row steps of intakeLead.

/** How a row on the fast path gets its company: an existing one, one to create by domain, or none. */
export type FastPathCompany = { id: number } | { newDomain: string } | null;

/**
 * The one rule for the fast path, for POST /leads and batch rows alike: the row certainly
 * creates a new person (none of its match keys is held in the workspace, nor shared with
 * another row of the same request), and its company is none, or is named by company.id alone,
 * or by the business domain of the person's email alone (found, or created with that domain
 * exactly as intakeLead would). Any company detail to fill in, a website or a name sends the
 * row the general way. Returns the row's company, or undefined when the row does not qualify.
 * The references (tags, company.id) are checked by the caller first.
 */
export function fastPathCompany(
  lead: PreparedLead, lookup: IntakeLookup, sharedKey: (key: MatchKey) => boolean = () => false,
): FastPathCompany | undefined {
  const matched = (key: MatchKey) => lookup.matches.some((match) => match.kind === key.kind && match.value === key.value);
  if (lead.identities.some((key) => matched(key) || sharedKey(key))) return undefined;
  const company = lead.company;
  if (!company) return null;
  if (companyHasDetails(company)) return undefined;
  if (company.id !== null) return { id: company.id };
  if (!company.domainFromEmail || company.domain === null) return undefined;
  return lookup.companyByDomain !== null ? { id: lookup.companyByDomain } : { newDomain: company.domain };
}

/**
 * POST /leads without an Idempotency-Key or dry run, for the rows that need no transaction:
 * a row on the fast path whose company and tags exist already (the autocommit statement
 * writes only the lead, its keys, tags and event), or a match under on_duplicate error or
 * skip. Two round trips: one lookup, one statement. Any other row (an update, a company or
 * tag to create, a person created concurrently since the lookup) returns `transaction`, with
 * the lookup to reuse when it is still good, and runs through intakeLead in a transaction.
 * Throws RowRejected / DuplicateRejected exactly as intakeLead does, before writing anything.
 */
export async function intakeLeadDirect(
  db: Executor, workspaceId: number, lead: PreparedLead, options: IntakeOptions,
): Promise<{ outcome: RowOutcome } | { transaction: IntakeLookup | undefined }> {
  const lookup = await lookupForIntake(db, workspaceId, lead);
  const references = checkReferences(lookup, lead, options);
  const match = await findMatch(db, workspaceId, lead.identities, lookup.matches);
  if (match.leadId !== null && match.identity) {
    const settled = settleWithoutUpdate(match.leadId, match.identity, lead, options);
    return settled ? { outcome: settled } : { transaction: lookup };
  }
  const company = fastPathCompany(lead, lookup);
  if (company === undefined || (company !== null && !('id' in company)) || references.missingTagNames.length > 0) return { transaction: lookup };
  const record = await insertNewLeadIfKeysFree(db, workspaceId, {
    values: leadValues(lead, company?.id ?? null),
    keys: lead.identities,
    tagIds: references.tagIds,
    events: [{ topic: 'lead.created' }],
  });
  // Someone created this person since the lookup: match again, in a transaction.
  if (!record) return { transaction: undefined };
  return {
    outcome: { status: 'created', leadId: record.id, matchedOn: null, warnings: lead.warnings, createdCompanyId: null, createdTagIds: [], record },
  };
}
