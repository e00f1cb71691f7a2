import type { BatchResponse, LeadWriteResponse } from '../../../generated/api.js';
import type { WriteResult } from '../../leads/intake/write-request.js';
import { DuplicateRejected, RowRejected } from '../../leads/intake/rejections.js';
import type { IntakeMetrics } from '../../metrics/metrics.js';

// What the intake operations did, for the metrics: a replay counts as a replay only (nothing
// was written again), a dry run not at all (nothing was saved).

/** POST /leads: the row's outcome, or the refusal that answered 409 (duplicate) or 422 (failed). */
export async function countLeadWrite(metrics: IntakeMetrics, dryRun: boolean, write: () => Promise<WriteResult<LeadWriteResponse>>): Promise<WriteResult<LeadWriteResponse>> {
  let result: WriteResult<LeadWriteResponse>;
  try {
    result = await write();
  } catch (error) {
    if (!dryRun && error instanceof DuplicateRejected) metrics.rows('createLead', 'duplicate');
    else if (!dryRun && error instanceof RowRejected) metrics.rows('createLead', 'failed');
    throw error;
  }
  if (result.replayed) metrics.replayed('createLead');
  else if (!result.body.meta.dry_run) metrics.rows('createLead', result.body.meta.status);
  return result;
}

/** POST /leads/batch: each row's outcome; a failed row carrying a lead id is a duplicate (the contract's BatchRowFailure). */
export function countBatchWrite(metrics: IntakeMetrics, result: WriteResult<BatchResponse>): void {
  if (result.replayed) {
    metrics.replayed('createLeadsBatch');
    return;
  }
  const { meta, data } = result.body;
  if (meta.dry_run) return;
  const duplicates = data.filter((row) => row.status === 'failed' && row.lead_id !== null).length;
  metrics.rows('createLeadsBatch', 'created', meta.created);
  metrics.rows('createLeadsBatch', 'updated', meta.updated);
  metrics.rows('createLeadsBatch', 'skipped', meta.skipped);
  metrics.rows('createLeadsBatch', 'duplicate', duplicates);
  metrics.rows('createLeadsBatch', 'failed', meta.failed - duplicates);
}
