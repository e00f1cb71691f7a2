import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';

// The outbox statements of an erasure (src/erasure/service.ts): events of the person's that are
// not fanned out yet go with their leads, so nothing sends the person after the erasure.

/** The leads' own events not fanned out yet (they would send the person after the erasure). */
export async function deleteLeadEvents(db: Executor, workspaceId: number, leadIds: readonly number[]): Promise<number> {
  const { rows } = await sql<{ id: number }>`
    DELETE FROM outbox
    WHERE workspace_id = ${workspaceId} AND topic IN ('lead.created', 'lead.tag_added') AND (payload->>'lead_id')::bigint = ANY(${[...leadIds]}::bigint[])
    RETURNING id
  `.execute(db);
  return rows.length;
}

/** The pending website analyses of companies deleted with the person. */
export async function deleteCompanyAnalyses(db: Executor, workspaceId: number, companyIds: readonly number[]): Promise<void> {
  if (companyIds.length === 0) return;
  await sql`
    DELETE FROM outbox WHERE workspace_id = ${workspaceId} AND topic = 'company.analyze' AND (payload->>'company_id')::bigint = ANY(${[...companyIds]}::bigint[])
  `.execute(db);
}
