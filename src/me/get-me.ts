import type { RequestHandler } from 'express';
import type { components } from '../../generated/api.js';
import type { AppContext } from '../context.js';
import { authOf } from '../http/auth.js';
import { BATCH_MAX } from '../leads/limits.js';

type MeResponse = components['schemas']['MeResponse'];

export function getMeHandler(ctx: AppContext): RequestHandler {
  return (req, res) => {
    const auth = authOf(req);
    const body: MeResponse = {
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
    };
    res.json(body);
  };
}
