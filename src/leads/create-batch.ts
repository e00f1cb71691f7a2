import type { RequestHandler } from 'express';
import type { components } from '../../generated/api.js';
import type { AppContext } from '../context.js';
import { authOf } from '../http/auth.js';
import { fingerprintRequest } from '../idempotency/fingerprint.js';
import { checkIdempotencyKey, runIdempotent } from '../idempotency/run-idempotent.js';
import { intakeBatch } from './batch-intake.js';
import { prepareLead } from './prepare.js';
import { sendWriteResult } from './send-write-result.js';

type BatchRequest = components['schemas']['BatchRequest'];
type BatchResponse = components['schemas']['BatchResponse'];
type BatchRowResult = components['schemas']['BatchRowResult'];

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
        const rows = await intakeBatch(trx, auth.workspaceId, leads, options, dryRun, req.log);
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
