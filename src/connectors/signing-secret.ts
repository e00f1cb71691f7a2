import { recordAudit, type Actor } from '../audit/service.js';
import type { Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { Refused } from '../refused.js';
import { findConnectorsAcrossWorkspaces } from './repository.js';

/** `connector reveal-secret`: the signing secret receivers verify with (and the previous one while it still signs). */
export async function revealSigningSecret(db: Executor, actor: Actor, id: number) {
  const connector = await inTransaction(db, async (trx) => {
    const found = (await findConnectorsAcrossWorkspaces(trx, [id])).get(id);
    if (!found || found.deleted_at !== null) throw new Refused('not_found', `Connector ${id} does not exist.`);
    await recordAudit(trx, { actor, workspaceId: found.workspace_id, action: 'connector.secret_revealed', target: { type: 'connector', id } });
    return found;
  });
  const previousSigns =
    connector.previous_signing_secret !== null && connector.previous_secret_expires_at !== null && Date.parse(connector.previous_secret_expires_at) > Date.now();
  return {
    id: connector.id,
    signing_secret: connector.signing_secret,
    ...(previousSigns ? { previous_signing_secret: connector.previous_signing_secret, previous_secret_signs_until: connector.previous_secret_expires_at } : {}),
  };
}
