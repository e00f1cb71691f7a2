import { sql, type Kysely } from 'kysely';
import { domainOfHost } from '../../normalize.js';

// Company domains become registrable domains (Public Suffix List): intake now looks companies
// up by `acme.co.uk` where it used to store the host as sent (`mail.acme.co.uk`, `eu.acme.co.uk`).
// Without this, such a company would never be found by domain again and the next lead from it
// would create a second company. Per workspace and registrable domain one company keeps the
// domain: the one already holding it exactly, else the oldest. The others keep their leads,
// details and name and lose only the domain (companies are not merged: that is an operator's
// call). A domain that is only a public suffix (`com`) identifies no company and is cleared.
// A name that was only a placeholder for the old domain follows it. Irreversible: down() keeps
// the data as it is.

interface StoredDomain {
  id: number;
  workspace_id: number;
  domain: string;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<StoredDomain>`SELECT id, workspace_id, domain FROM companies WHERE domain IS NOT NULL ORDER BY id`.execute(db);
  const groups = new Map<string, { domain: string; companies: StoredDomain[] }>();
  const cleared: number[] = [];
  for (const company of rows) {
    const domain = domainOfHost(company.domain);
    if (domain === null) {
      cleared.push(company.id);
      continue;
    }
    const key = `${company.workspace_id} ${domain}`;
    const group = groups.get(key) ?? { domain, companies: [] };
    group.companies.push(company);
    groups.set(key, group);
  }

  const moved: Array<{ id: number; domain: string }> = [];
  for (const { domain, companies } of groups.values()) {
    const keeper = companies.find((company) => company.domain === domain) ?? companies[0]!;
    for (const company of companies) if (company !== keeper) cleared.push(company.id);
    if (keeper.domain !== domain) moved.push({ id: keeper.id, domain });
  }

  // Cleared first, so no moved domain meets its old holder on the unique index.
  if (cleared.length > 0) {
    await sql`UPDATE companies SET domain = NULL, updated_at = now() WHERE id = ANY(${cleared}::bigint[])`.execute(db);
  }
  if (moved.length > 0) {
    await sql`
      UPDATE companies AS c SET
        name = CASE WHEN c.name = c.domain THEN m.domain ELSE c.name END,
        domain = m.domain,
        updated_at = now()
      FROM unnest(${moved.map((row) => row.id)}::bigint[], ${moved.map((row) => row.domain)}::text[]) AS m(id, domain)
      WHERE c.id = m.id
    `.execute(db);
  }
}

export async function down(): Promise<void> {
  // The hosts the domains were derived from are not kept: nothing to restore.
}
