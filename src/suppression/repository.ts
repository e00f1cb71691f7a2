import type { Executor } from '../db/connect.js';
import type { IdentityKind } from '../db/schema.js';
import { contactDigest, contactDigestsToMatch } from '../secrets/contact-digest.js';

// suppressed_contacts: the keyed digests of the contact details of people erased with
// suppression (migration 0018). Every statement on the table is here.

export interface ContactKey {
  kind: IdentityKind;
  /** The normalized match key, as lead_identities holds it. */
  value: string;
}

export async function suppressContacts(db: Executor, workspaceId: number, keys: readonly ContactKey[]): Promise<number> {
  if (keys.length === 0) return 0;
  const rows = keys.map((key) => ({ workspace_id: workspaceId, kind: key.kind, digest: contactDigest(key.kind, key.value) }));
  const inserted = await db
    .insertInto('suppressed_contacts')
    .values(rows)
    .onConflict((conflict) => conflict.columns(['workspace_id', 'digest']).doNothing())
    .returning('kind')
    .execute();
  return inserted.length;
}

/** Which of the keys are suppressed in the workspace, by their index in `keys`. */
export async function suppressedKeys(db: Executor, workspaceId: number, keys: readonly ContactKey[]): Promise<Set<number>> {
  if (keys.length === 0) return new Set();
  const candidates = keys.flatMap((key, index) => contactDigestsToMatch(key.kind, key.value).map((digest) => ({ index, digest })));
  const found = await db
    .selectFrom('suppressed_contacts')
    .select('digest')
    .where('workspace_id', '=', workspaceId)
    .where(
      'digest',
      'in',
      candidates.map((candidate) => candidate.digest),
    )
    .execute();
  const hits = new Set(found.map((row) => row.digest.toString('hex')));
  return new Set(candidates.filter((candidate) => hits.has(candidate.digest.toString('hex'))).map((candidate) => candidate.index));
}
