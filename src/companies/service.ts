import { recordAudit, type Actor } from '../audit/service.js';
import type { Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { isUniqueViolation } from '../db/sql.js';
import { domainOfUrl } from '../normalize.js';
import { Refused } from '../refused.js';
import { insertCompany } from './repository.js';

/**
 * A company made by an operator, from a name, a website (already an absolute http(s) URL) or
 * both: the website's registrable domain is its domain. Never analyzed (no lead asked for it).
 */
export async function createCompany(db: Executor, actor: Actor, input: { workspaceId: number; name: string | null; website: string | null }) {
  if (!input.name && !input.website) throw new Refused('invalid_argument', 'Give a name, a website or both.');
  const domain = input.website ? domainOfUrl(input.website) : null;
  return inTransaction(db, async (trx) => {
    const created = await insertCompany(trx, {
      workspace_id: input.workspaceId,
      name: input.name,
      domain,
      status: 'not_analyzed',
      links: input.website ? [{ type: 'website', url: input.website }] : [],
    }).catch((error: unknown) => {
      if (isUniqueViolation(error)) throw new Refused('conflict', `The workspace already has a company with the domain ${domain}.`);
      throw error;
    });
    await recordAudit(trx, { actor, workspaceId: input.workspaceId, action: 'company.created', target: { type: 'company', id: created.id } });
    return { id: created.id, name: created.name, website: input.website };
  });
}
