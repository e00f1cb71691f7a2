import type { Lead } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
import { presentLead } from './present.js';
import { findLeadRecords } from './read-repository.js';

/** One lead of the workspace in the API's shape; null for a missing lead and another workspace's alike. */
export async function getLead(db: Executor, workspaceId: number, leadId: number): Promise<Lead | null> {
  const [record] = await findLeadRecords(db, workspaceId, [leadId]);
  return record ? presentLead(record) : null;
}

/** Leads by id, in the API's shape, one query per workspace involved. */
export async function loadLeads(db: Executor, refs: ReadonlyArray<{ id: number; workspace_id: number }>): Promise<Map<number, Lead>> {
  const byWorkspace = new Map<number, number[]>();
  for (const ref of refs) {
    const ids = byWorkspace.get(ref.workspace_id);
    if (ids) ids.push(ref.id);
    else byWorkspace.set(ref.workspace_id, [ref.id]);
  }
  const leads = new Map<number, Lead>();
  for (const [workspaceId, ids] of byWorkspace) {
    for (const record of await findLeadRecords(db, workspaceId, [...new Set(ids)])) leads.set(record.id, presentLead(record));
  }
  return leads;
}
