import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { BatchRequest, BatchResponse, BatchRowResult, IntakeSwitches, Lead, LeadCreateRequest, LeadWriteResponse } from '../../generated/api.js';
import type { Db, Executor } from '../db/connect.js';
import { inSavepoint } from '../db/savepoint.js';
import type { Database } from '../db/schema.js';
import { fingerprintRequest } from '../idempotency/fingerprint.js';
import { runIdempotent, type WriteResult } from '../idempotency/run-idempotent.js';
import { intakeBatch } from './batch-intake.js';
import { intakeLeadDirect } from './fast-path.js';
import type { IntakeLookup } from './lookup.js';
import { prepareLead } from './prepare.js';
import { presentLead } from './present.js';
import { findLeadRecords } from './read-repository.js';
import { intakeLead, type IntakeOptions, type RowOutcome } from './row-intake.js';

// Lead intake as the two POST operations ask for it: each call is one write (a transaction,
// or for most new people one autocommit statement), made idempotent by its Idempotency-Key,
// and answered with the body and status the contract gives. Rejections are thrown
// (RowRejected, DuplicateRejected, IdempotencyConflict) and nothing of the call is kept.

/** Who calls: the API key's workspace and the key itself (Idempotency-Keys are per API key). */
export interface Caller { workspaceId: number; apiKeyId: number }

/** The Idempotency-Key when one was sent, and the body as sent (before defaults were filled in), which it covers. */
export interface Idempotency { key: string | undefined; bodyAsSent: unknown }

type WriteAnswer<Body> = { status: number; body: Body };

function switchesOf(request: IntakeSwitches): { options: IntakeOptions; dryRun: boolean } {
  return {
    options: {
      onDuplicate: request.on_duplicate ?? 'update',
      createMissingTags: request.create_missing_tags ?? true,
      enrich: request.enrich ?? true,
    },
    dryRun: request.dry_run ?? false,
  };
}

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

/** POST /leads: creates, updates or skips one lead. */
export async function createLead(db: Db, caller: Caller, request: LeadCreateRequest, idempotency: Idempotency): Promise<WriteResult<LeadWriteResponse>> {
  const lead = prepareLead(request);
  const { options, dryRun } = switchesOf(request);

  const answer = async (executor: Executor, outcome: RowOutcome): Promise<WriteAnswer<LeadWriteResponse>> => {
    // A created lead comes back from the statement that wrote it; others are read now.
    const record = outcome.record ?? (await findLeadRecords(executor, caller.workspaceId, [outcome.leadId]))[0];
    const presented = presentLead(record!);
    return {
      status: outcome.status === 'created' && !dryRun ? 201 : 200,
      body: {
        data: dryRun ? maskPreviewIds(presented, outcome) : presented,
        meta: { status: outcome.status, dry_run: dryRun, matched_on: outcome.matchedOn, warnings: outcome.warnings },
      },
    };
  };

  // Without an Idempotency-Key or dry run, most rows need no transaction (intakeLeadDirect).
  let prefetched: IntakeLookup | undefined;
  if (idempotency.key === undefined && !dryRun) {
    const direct = await intakeLeadDirect(db, caller.workspaceId, lead, options);
    if ('outcome' in direct) return { ...(await answer(db, direct.outcome)), replayed: false };
    prefetched = direct.transaction;
  }

  const write = async (trx: Transaction<Database>) => answer(trx, await intakeLead(trx, caller.workspaceId, lead, options, prefetched));
  return runIdempotent<LeadWriteResponse>(
    db,
    { apiKeyId: caller.apiKeyId, key: idempotency.key, fingerprint: fingerprintRequest('POST /api/v1/leads', idempotency.bodyAsSent) },
    // A dry run writes inside a savepoint that is always rolled back; a real write needs
    // none, since any error rolls the whole transaction back.
    (trx) => (dryRun ? inSavepoint(trx, 'lead_write', false, () => write(trx)) : write(trx)),
  );
}

/** POST /leads/batch: every row in order in one transaction, each reported; always 200. */
export async function createLeadsBatch(db: Db, caller: Caller, request: BatchRequest, idempotency: Idempotency, log: Logger): Promise<WriteResult<BatchResponse>> {
  const { options, dryRun } = switchesOf(request);
  const leads = request.leads.map(prepareLead);
  return runIdempotent<BatchResponse>(
    db,
    { apiKeyId: caller.apiKeyId, key: idempotency.key, fingerprint: fingerprintRequest('POST /api/v1/leads/batch', idempotency.bodyAsSent) },
    async (trx) => {
      const rows = await intakeBatch(trx, caller.workspaceId, leads, options, dryRun, log);
      const count = (status: BatchRowResult['status']) => rows.filter((row) => row.status === status).length;
      return {
        status: 200,
        body: {
          data: rows,
          meta: { created: count('created'), updated: count('updated'), skipped: count('skipped'), failed: count('failed'), total: leads.length, dry_run: dryRun },
        },
      };
    },
  );
}
