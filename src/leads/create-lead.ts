import type { RequestHandler } from 'express';
import type { Transaction } from 'kysely';
import type { components } from '../../generated/api.js';
import type { AppContext } from '../context.js';
import type { Database } from '../db/schema.js';
import { authOf } from '../http/auth.js';
import { ApiError, ValidationFailed } from '../http/errors.js';
import { fingerprintRequest } from '../idempotency/fingerprint.js';
import { checkIdempotencyKey, runIdempotent } from '../idempotency/run-idempotent.js';
import type { Executor } from '../db/connect.js';
import { DuplicateRejected, intakeLead, intakeLeadDirect, RowRejected, type RowOutcome } from './intake.js';
import type { IntakeLookup } from './lookup.js';
import { prepareLead } from './prepare.js';
import { presentLead } from './present.js';
import { findLeadRecords } from './read-repository.js';
import { inSavepoint } from './savepoint.js';
import { sendWriteResult } from './send-write-result.js';

type LeadCreateRequest = components['schemas']['LeadCreateRequest'];
type LeadWriteResponse = components['schemas']['LeadWriteResponse'];
type Lead = components['schemas']['Lead'];
type WriteAnswer = { status: number; body: LeadWriteResponse };

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

/** A rejected row is the request's error: 422 for a payload problem, 409 for a duplicate under `error`. */
async function rejectionsAsErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof RowRejected) throw ValidationFailed.single(error.field, error.message);
    if (error instanceof DuplicateRejected) {
      throw new ApiError(409, { error: 'duplicate_lead', message: error.message, matched_on: error.matchedOn, lead_id: error.leadId });
    }
    throw error;
  }
}

export function createLeadHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    const auth = authOf(req);
    const body = req.body as LeadCreateRequest;
    const idempotencyKey = req.get('idempotency-key');
    checkIdempotencyKey(idempotencyKey);

    const lead = prepareLead(body);
    const options = {
      onDuplicate: body.on_duplicate ?? 'update',
      createMissingTags: body.create_missing_tags ?? true,
      enrich: body.enrich ?? true,
    };
    const dryRun = body.dry_run ?? false;

    const answer = async (db: Executor, outcome: RowOutcome): Promise<WriteAnswer> => {
      // A created lead comes back from the statement that wrote it; others are read now.
      const record = outcome.record ?? (await findLeadRecords(db, auth.workspaceId, [outcome.leadId]))[0];
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
    if (idempotencyKey === undefined && !dryRun) {
      const direct = await rejectionsAsErrors(() => intakeLeadDirect(ctx.db, auth.workspaceId, lead, options));
      if ('outcome' in direct) {
        sendWriteResult(res, { ...(await answer(ctx.db, direct.outcome)), replayed: false });
        return;
      }
      prefetched = direct.transaction;
    }

    const write = async (trx: Transaction<Database>): Promise<WriteAnswer> =>
      answer(trx, await rejectionsAsErrors(() => intakeLead(trx, auth.workspaceId, lead, options, prefetched)));

    const result = await runIdempotent<LeadWriteResponse>(
      ctx.db,
      { apiKeyId: auth.apiKeyId, key: idempotencyKey, fingerprint: fingerprintRequest('POST /api/v1/leads', req.bodyAsSent) },
      // A dry run writes inside a savepoint that is always rolled back; a real write needs
      // none, since any error rolls the whole transaction back.
      (trx) => (dryRun ? inSavepoint(trx, 'lead_write', false, () => write(trx)) : write(trx)),
    );
    sendWriteResult(res, result);
  };
}
