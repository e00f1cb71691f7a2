import type { AppContext } from '../../context.js';
import { createLeadsBatch } from '../../leads/intake/intake-service.js';
import { deprecatedFieldNotices } from '../deprecation.js';
import { authOf } from '../middleware/auth.js';
import type { OperationHandler } from '../operations.js';
import { countBatchWrite } from './intake-counts.js';
import { idempotencyOf, sendWriteResult } from './write-result.js';

export function createLeadsBatchHandler(ctx: AppContext): OperationHandler<'createLeadsBatch'> {
  return async (req, res) => {
    const { workspaceId, apiKeyId } = authOf(req);
    // A deprecated property of the call itself (beside `leads`) is reported on every row.
    const found = deprecatedFieldNotices(res);
    const notices = req.body.leads.map((_lead, index) => found.filter((notice) => notice.row === null || notice.row === index).map((notice) => notice.message));
    const result = await createLeadsBatch(ctx.writeGroups, ctx.suppressionScreen, { workspaceId, apiKeyId }, req.body, idempotencyOf(req), notices);
    countBatchWrite(ctx.metrics.intake, result);
    sendWriteResult(res, result);
  };
}
