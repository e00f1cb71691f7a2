import type { LeadWriteMeta, MatchConflict } from '../../../generated/api.js';
import type { IdentityMatch } from '../lookup-repository.js';
import type { IdentityKey } from './prepare.js';

// The match rule: which existing lead a payload's keys decide on, and the others they point at.

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

/** What matched, as every lead write answer reports it (meta, a batch row, the 409 body). */
export type MatchReport = Pick<LeadWriteMeta, 'matched_on' | 'match_kind' | 'conflicts'>;

export const nothingMatched = (): MatchReport => ({ matched_on: null, match_kind: null, conflicts: [] });

export const reportMatch = (match: StrongestMatch) => ({ matched_on: match.identity.label, match_kind: match.identity.kind, conflicts: match.conflicts }) satisfies MatchReport;
