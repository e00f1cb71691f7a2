import type { RequestHandler } from 'express';
import type { components } from '../../generated/api.js';
import type { AppContext } from '../context.js';
import { authOf } from '../http/auth.js';
import { fingerprintRequest } from '../idempotency/fingerprint.js';
import { checkIdempotencyKey, runIdempotent } from '../idempotency/run-idempotent.js';
import { DuplicateRejected, intakeLead, RowRejected } from './intake.js';
import { prepareLead } from './prepare.js';
import { inSavepoint } from './savepoint.js';
import { sendWriteResult } from './send-write-result.js';

type BatchRequest = components['schemas']['BatchRequest'];
type BatchResponse = components['schemas']['BatchResponse'];
type BatchRowResult = components['schemas']['BatchRowResult'];

const UNEXPECTED_ROW_FAILURE = 'This row could not be processed because of an unexpected error. Retry the request; contact support if it keeps failing.';

export function createBatchHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    const auth = authOf(req);
    const body = req.body as BatchRequest;
    const idempotencyKey = req.get('idempotency-key');
    checkIdempotencyKey(idempotencyKey);

    const options = {
      onDuplicate: body.on_duplicate ?? 'update',
      createMissingTags: body.create_missing_tags ?? true,
      enrich: body.enrich ?? true,
    };
    const dryRun = body.dry_run ?? false;
    const leads = body.leads.map(prepareLead);

    const result = await runIdempotent<BatchResponse>(
      ctx.db,
      { apiKeyId: auth.apiKeyId, key: idempotencyKey, fingerprint: fingerprintRequest('POST /api/v1/leads/batch', req.bodyAsSent) },
      async (trx) => {
        const rows: BatchRowResult[] = [];
        // Rows run in order, each in its own savepoint: a failing row undoes only itself, and
        // in a dry run every row is undone before the next one runs.
        for (const [index, lead] of leads.entries()) {
          try {
            const outcome = await inSavepoint(trx, 'batch_row', !dryRun, () => intakeLead(trx, auth.workspaceId, lead, options));
            rows.push({ index, status: outcome.status, lead_id: dryRun ? null : outcome.leadId, warnings: outcome.warnings });
          } catch (error) {
            if (error instanceof RowRejected) {
              rows.push({ index, status: 'failed', lead_id: null, error: error.message, field: error.field });
            } else if (error instanceof DuplicateRejected) {
              // The spec gives a duplicate's row the matched lead's id, except in a dry run where every lead_id is null.
              rows.push({ index, status: 'failed', lead_id: dryRun ? null : error.leadId, error: error.message, field: 'email' });
            } else {
              req.log.error({ err: error, index }, 'batch row failed unexpectedly');
              rows.push({ index, status: 'failed', lead_id: null, error: UNEXPECTED_ROW_FAILURE, field: null });
            }
          }
        }
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
    sendWriteResult(res, result);
  };
}
