import type { AppContext } from '../../context.js';
import { listTags } from '../../tags/repository.js';
import { authOf } from '../middleware/auth.js';
import type { OperationHandler } from '../operations.js';

export function listTagsHandler(ctx: AppContext): OperationHandler<'listTags'> {
  return async (req, res) => {
    // The validator has already coerced the query string to a boolean.
    const includeArchived = req.query.include_archived === true;
    res.json({ data: await listTags(ctx.db, authOf(req).workspaceId, includeArchived) });
  };
}
