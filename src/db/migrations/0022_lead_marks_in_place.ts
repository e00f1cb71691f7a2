import { sql, type Kysely } from 'kysely';

// A lead's analysed mark (the fan-out's `UPDATE leads SET analyzed_at`, once per new lead whose
// company is known) named a column of an index predicate, leads_company_unanalyzed_idx, so
// PostgreSQL could never update it in place (HOT): every mark wrote an entry in each index of
// leads, the trigram one included. The company's not yet analysed leads are found through
// leads_workspace_company_idx (the analysis knows the workspace). leads_workspace_idx is
// leads_workspace_newest_idx's first column alone: every new lead and every copied row paid for
// an index no query needs.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS leads_company_unanalyzed_idx, leads_workspace_idx`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE INDEX leads_workspace_idx ON leads (workspace_id);
    CREATE INDEX leads_company_unanalyzed_idx ON leads (company_id) WHERE analyzed_at IS NULL;
  `.execute(db);
}
