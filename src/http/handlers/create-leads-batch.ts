import type { AppContext } from '../../context.js';
import { createLeadsBatch } from '../../leads/intake/intake-service.js';
import { authOf } from '../middleware/auth.js';
import type { OperationHandler } from '../operations.js';
import { countBatchWrite } from './intake-counts.js';
import { idempotencyOf, sendWriteResult } from './write-result.js';

export function createLeadsBatchHandler(ctx: AppContext): OperationHandler<'createLeadsBatch'> {
  return async (req, res) => {
    const { workspaceId, apiKeyId } = authOf(req);
    const result = await createLeadsBatch(ctx.writeGroups, { workspaceId, apiKeyId }, req.body, idempotencyOf(req));
    countBatchWrite(ctx.metrics.intake, result);
    sendWriteResult(res, result);
  };
}
