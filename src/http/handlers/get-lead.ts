import type { AppContext } from '../../context.js';
import { ApiError, NOT_FOUND_BODY } from '../errors.js';
import { authOf } from '../middleware/auth.js';
import type { OperationHandler } from '../operations.js';

export function getLeadHandler(ctx: AppContext): OperationHandler<'getLead'> {
  return async (req, res) => {
    // integerPathParameters made `id` an integer within the schema's 1 to 2^53 - 1.
    const lead = await ctx.leadReads.getLead(authOf(req).workspaceId, req.params.id);
    if (!lead) throw new ApiError(404, NOT_FOUND_BODY);
    res.json({ data: lead });
  };
}
