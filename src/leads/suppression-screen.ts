import type { Executor } from '../db/connect.js';
import type { IdentityKind } from '../db/schema.js';
import type { PreparedLead } from './intake/prepare.js';
import { RowRejected } from './intake/rejections.js';
import { suppressedKeys } from '../suppression/repository.js';

// Suppression: a person erased with `--suppress` (or the console's "Do not store this person
// again") is refused when a write carries one of their contact details again. The intake asks
// once per request, before its rows are planned (src/leads/intake/intake-service.ts); here,
// with the intake it screens for, as suppression/ (the stored digests) sits below leads/.

const FIELD_OF_KIND: Record<IdentityKind, string> = { email: 'email', phone: 'phone', linkedin: 'linkedin_url' };
const DETAIL_OF_KIND: Record<IdentityKind, string> = { email: 'email address', phone: 'phone number', linkedin: 'LinkedIn profile' };

export const suppressedMessage = (kind: IdentityKind) =>
  `This person asked not to be stored; their ${DETAIL_OF_KIND[kind]} is on this workspace's suppression list, so the lead was not saved.`;

/** For each lead, the refusal of a suppressed person (filed under the first of their details that matched), or null. */
export type SuppressionScreen = (workspaceId: number, leads: readonly PreparedLead[]) => Promise<Array<RowRejected | null>>;

export function suppressionScreen(db: Executor): SuppressionScreen {
  return async (workspaceId, leads) => {
    const keys = leads.flatMap((lead, row) => lead.identities.map((key) => ({ row, kind: key.kind, value: key.value })));
    const hits = await suppressedKeys(db, workspaceId, keys);
    const refusals: Array<RowRejected | null> = leads.map(() => null);
    keys.forEach((key, index) => {
      if (hits.has(index) && refusals[key.row] === null) refusals[key.row] = new RowRejected(FIELD_OF_KIND[key.kind], suppressedMessage(key.kind));
    });
    return refusals;
  };
}

/** The engine's results of the rows that were run, with the refused rows put back in their places. */
export function withRefusedRows<Result>(refusals: ReadonlyArray<RowRejected | null>, results: readonly Result[], refused: (rejected: RowRejected) => Result): Result[] {
  let next = 0;
  return refusals.map((refusal) => (refusal ? refused(refusal) : results[next++]!));
}
