import type { BatchRequest, BatchResponse, BatchRowResult, Lead, LeadCreateRequest, LeadWriteResponse } from '../../../generated/api.js';
import { fingerprintRequest } from '../../idempotency/fingerprint.js';
import { nothingMatched } from './match.js';
import { prepareLead, type PreparedLead } from './prepare.js';
import { presentLead } from '../present.js';
import { DuplicateRejected } from './rejections.js';
import { storedTraceContext } from '../../tracing/spans.js';
import { switchesOf, type RowOutcome, type RowResult, type WriteRequest, type WriteResult } from './write-request.js';
import type { WriteGroups } from './write-groups.js';
import { withRefusedRows, type SuppressionScreen } from '../suppression-screen.js';

// Lead intake as the two POST operations ask for it: each call is a write request run by the
// executor in a write group (src/leads/intake/write-groups.ts), made idempotent by its
// Idempotency-Key, and answered with the body and status the contract gives. Rejections are
// thrown (RowRejected, DuplicateRejected, IdempotencyConflict) and nothing of the call is kept.

/** Who calls: the API key's workspace and the key itself (Idempotency-Keys are per API key). */
export interface Caller {
  workspaceId: number;
  apiKeyId: number;
  /** The workspace keeps a suppression list: its rows are screened before they are planned. */
  hasSuppressionList: boolean;
  /** The source the leads it creates are stored with when not 'api': a CSV import's batches. */
  leadSource?: 'import';
}

/** Each lead's refusal as a suppressed person, or null; no statement for a workspace that never suppressed anyone. */
const refusalsOf = async (screen: SuppressionScreen, caller: Caller, leads: Parameters<SuppressionScreen>[1]) =>
  caller.hasSuppressionList ? screen(caller.workspaceId, leads) : leads.map(() => null);

/** The Idempotency-Key when one was sent, and the body as sent (before defaults were filled in), which it covers. */
export interface Idempotency {
  key: string | undefined;
  bodyAsSent: unknown;
}

type WriteAnswer<Body> = { status: number; body: Body };

/** A dry run reports what would be saved; ids of rows that would be created do not exist. */
function maskPreviewIds(lead: Lead, outcome: RowOutcome): Lead {
  const createdTags = new Set(outcome.createdTagIds);
  const maskTags = (tags: Lead['tags']) => tags.map((tag) => (tag.id !== null && createdTags.has(tag.id) ? { ...tag, id: null } : tag));
  return {
    ...lead,
    id: outcome.status === 'created' ? null : lead.id,
    tags: maskTags(lead.tags),
    company: lead.company && {
      ...lead.company,
      id: lead.company.id === outcome.createdCompanyId ? null : lead.company.id,
      tags: maskTags(lead.company.tags),
    },
  };
}

function idempotencyScope(caller: Caller, operation: string, idempotency: Idempotency): WriteRequest<unknown>['idempotency'] {
  if (idempotency.key === undefined) return null;
  return { workspaceId: caller.workspaceId, apiKeyId: caller.apiKeyId, key: idempotency.key, fingerprint: fingerprintRequest(operation, idempotency.bodyAsSent) };
}

/** A prepared lead with the warnings the edge found in its request (deprecated properties sent) first. */
const withNotices = (lead: PreparedLead, notices: string[]): PreparedLead => (notices.length > 0 ? { ...lead, warnings: [...notices, ...lead.warnings] } : lead);

/**
 * POST /leads: creates, updates or skips one lead; concurrent calls share a group's
 * transaction, a dry run runs alone. `notices` go into `meta.warnings`.
 */
export async function createLead(
  groups: WriteGroups,
  screen: SuppressionScreen,
  caller: Caller,
  request: LeadCreateRequest,
  idempotency: Idempotency,
  notices: string[] = [],
): Promise<WriteResult<LeadWriteResponse>> {
  const { options, dryRun } = switchesOf(request);
  const lead = { ...withNotices(prepareLead(request), notices), trace: storedTraceContext() };
  // A person erased with suppression is refused before the write is planned.
  const [refusal] = await refusalsOf(screen, caller, [lead]);
  if (refusal) throw refusal;
  const write: WriteRequest<LeadWriteResponse> = {
    workspaceId: caller.workspaceId,
    apiKeyId: caller.apiKeyId,
    idempotency: idempotencyScope(caller, 'POST /api/v1/leads', idempotency),
    rows: [{ lead, wantsRecord: true }],
    options,
    dryRun,
    answer: ([result]): WriteAnswer<LeadWriteResponse> => {
      if (!('outcome' in result!)) throw 'rejected' in result! ? result.rejected : result!.unexpected;
      const { outcome } = result;
      const presented = presentLead(outcome.record!);
      return {
        status: outcome.status === 'created' && !dryRun ? 201 : 200,
        body: {
          data: dryRun ? maskPreviewIds(presented, outcome) : presented,
          meta: { status: outcome.status, dry_run: dryRun, ...outcome.match, warnings: outcome.warnings },
        },
      };
    },
  };
  return dryRun ? groups.alone(write) : groups.submit(write);
}

const UNEXPECTED_ROW_FAILURE = 'This row could not be processed because of an unexpected error. Retry the request; contact support if it keeps failing.';

/** A batch row's result as the contract reports it. */
function batchRow(index: number, result: RowResult, dryRun: boolean): BatchRowResult {
  if ('outcome' in result) {
    const { outcome } = result;
    return { index, status: outcome.status, lead_id: dryRun ? null : outcome.leadId, ...outcome.match, warnings: outcome.warnings };
  }
  if ('unexpected' in result) return { index, status: 'failed', lead_id: null, ...nothingMatched(), error: UNEXPECTED_ROW_FAILURE, field: null };
  const { rejected } = result;
  if (rejected instanceof DuplicateRejected) {
    // The spec gives a duplicate's row the matched lead's id, except in a dry run where every lead_id is null.
    const { lead_id: leadId, ...match } = rejected.match;
    return { index, status: 'failed', lead_id: dryRun ? null : leadId, ...match, error: rejected.message, field: 'email' };
  }
  return { index, status: 'failed', lead_id: null, ...nothingMatched(), error: rejected.message, field: rejected.field };
}

/** POST /leads/batch: every row in order in one transaction of its own, each reported; always 200. `notices[i]` go into row i's warnings. */
export async function createLeadsBatch(
  groups: WriteGroups,
  screen: SuppressionScreen,
  caller: Caller,
  request: BatchRequest,
  idempotency: Idempotency,
  notices: string[][] = [],
): Promise<WriteResult<BatchResponse>> {
  const { options, dryRun } = switchesOf(request);
  const trace = storedTraceContext();
  const leads = request.leads.map((lead, index) => ({ ...withNotices(prepareLead(lead), notices[index] ?? []), trace, source: caller.leadSource }));
  // Rows of people erased with suppression never reach the engine: they fail in their places.
  const refusals = await refusalsOf(screen, caller, leads);
  return groups.alone<BatchResponse>({
    workspaceId: caller.workspaceId,
    apiKeyId: caller.apiKeyId,
    idempotency: idempotencyScope(caller, 'POST /api/v1/leads/batch', idempotency),
    rows: leads.filter((_, index) => !refusals[index]).map((lead) => ({ lead, wantsRecord: false })),
    options,
    dryRun,
    answer: (ran) => {
      const results = withRefusedRows<RowResult>(refusals, ran, (rejected) => ({ rejected }));
      const rows = results.map((result, index) => batchRow(index, result, dryRun));
      const count = (status: BatchRowResult['status']) => rows.filter((row) => row.status === status).length;
      return {
        status: 200,
        body: {
          data: rows,
          meta: { created: count('created'), updated: count('updated'), skipped: count('skipped'), failed: count('failed'), total: rows.length, dry_run: dryRun },
        },
      };
    },
  });
}
