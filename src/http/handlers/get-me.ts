import type { AppContext } from '../../context.js';
import { BATCH_MAX } from '../../limits.js';
import { authOf } from '../middleware/auth.js';
import type { OperationHandler } from '../operations.js';

export function getMeHandler(ctx: AppContext): OperationHandler<'getMe'> {
  return (req, res) => {
    const auth = authOf(req);
    res.json({
      data: {
        workspace: { id: auth.workspaceId, name: auth.workspaceName },
        api_key: {
          name: auth.name,
          prefix: auth.prefix,
          scopes: auth.scopes,
          expires_at: auth.expiresAt,
          last_used_at: auth.lastUsedAt,
        },
        rate_limit: { requests_per_minute: ctx.config.RATE_LIMIT_PER_MINUTE, batch_max: BATCH_MAX },
      },
    });
  };
}
