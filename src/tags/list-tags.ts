import type { RequestHandler } from 'express';
import type { components } from '../../generated/api.js';
import type { AppContext } from '../context.js';
import { authOf } from '../http/auth.js';
import { listTags } from './repository.js';

type TagListResponse = components['schemas']['TagListResponse'];

export function listTagsHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    // The validator has already coerced the query string to a boolean.
    const includeArchived = (req.query.include_archived as unknown) === true;
    const body: TagListResponse = { data: await listTags(ctx.db, authOf(req).workspaceId, includeArchived) };
    res.json(body);
  };
}
