import type { Executor } from '../db/connect.js';
import { domainOfUrl } from '../normalize.js';
import { insertCompany } from './repository.js';

/**
 * A company made by an operator, from a name, a website (already an absolute http(s) URL) or
 * both: the website's registrable domain is its domain. Never analyzed (no lead asked for it).
 */
export async function createCompany(db: Executor, input: { workspaceId: number; name: string | null; website: string | null }) {
  const created = await insertCompany(db, {
    workspace_id: input.workspaceId,
    name: input.name,
    domain: input.website ? domainOfUrl(input.website) : null,
    status: 'not_analyzed',
    links: input.website ? [{ type: 'website', url: input.website }] : [],
  });
  return { id: created.id, name: created.name, website: input.website };
}
