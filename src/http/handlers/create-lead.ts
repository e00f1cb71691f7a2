import type { AppContext } from '../../context.js';
import { createLead } from '../../leads/intake/intake-service.js';
import { deprecatedFieldNotices } from '../deprecation.js';
import { authOf } from '../middleware/auth.js';
import type { OperationHandler } from '../operations.js';
import { countLeadWrite } from './intake-counts.js';
import { idempotencyOf, sendWriteResult } from './write-result.js';

export function createLeadHandler(ctx: AppContext): OperationHandler<'createLead'> {
  return async (req, res) => {
    const { workspaceId, apiKeyId } = authOf(req);
    const write = () =>
      createLead(
        ctx.writeGroups,
        ctx.suppressionScreen,
        { workspaceId, apiKeyId },
        req.body,
        idempotencyOf(req),
        deprecatedFieldNotices(res).map((notice) => notice.message),
      );
    sendWriteResult(res, await countLeadWrite(ctx.metrics.intake, req.body.dry_run ?? false, write));
  };
}
