import DataLoader from 'dataloader';
import type { Lead } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
import { groupBy } from '../group-by.js';
import type { LeadRecord } from './columns.js';
import { presentLead } from './present.js';
import { findLeadRecords } from './read-repository.js';

interface LeadRef {
  workspaceId: number;
  leadId: number;
}

const refKey = ({ workspaceId, leadId }: LeadRef) => `${workspaceId}:${leadId}`;

/**
 * GET /leads/{id} coalesced: the reads that arrive within one turn of the event loop share one
 * statement per workspace (`id = ANY(...)`), each answered with its own lead. Nothing is
 * cached across turns, so every answer is as fresh as a read of its own.
 */
export class LeadReads {
  private readonly loader: DataLoader<LeadRef, LeadRecord | null, string>;

  constructor(db: Executor) {
    this.loader = new DataLoader(
      async (refs) => {
        const found = new Map<string, LeadRecord>();
        const byWorkspace = groupBy(
          refs,
          (ref) => ref.workspaceId,
          (ref) => ref.leadId,
        );
        for (const [workspaceId, ids] of byWorkspace) {
          for (const record of await findLeadRecords(db, workspaceId, ids)) found.set(refKey({ workspaceId, leadId: record.id }), record);
        }
        return refs.map((ref) => found.get(refKey(ref)) ?? null);
      },
      {
        cache: false,
        cacheKeyFn: refKey,
        // Requests of one poll phase (each on its own socket) are read together: the batch runs once I/O callbacks are done.
        batchScheduleFn: (run) => setImmediate(run),
      },
    );
  }

  /** One lead of the workspace in the API's shape; null for a missing lead and another workspace's alike. */
  async getLead(workspaceId: number, leadId: number): Promise<Lead | null> {
    const record = await this.loader.load({ workspaceId, leadId });
    return record ? presentLead(record) : null;
  }
}

/** Leads by id, in the API's shape, one query per workspace involved. */
export async function loadLeads(db: Executor, refs: ReadonlyArray<{ id: number; workspace_id: number }>): Promise<Map<number, Lead>> {
  const leads = new Map<number, Lead>();
  const byWorkspace = groupBy(
    refs,
    (ref) => ref.workspace_id,
    (ref) => ref.id,
  );
  for (const [workspaceId, ids] of byWorkspace) {
    for (const record of await findLeadRecords(db, workspaceId, [...new Set(ids)])) leads.set(record.id, presentLead(record));
  }
  return leads;
}
