import type { RequestHandler } from 'express';
import type { components } from '../../generated/api.js';
import type { AppContext } from '../context.js';
import { authOf } from '../http/auth.js';
import { ApiError, NOT_FOUND_BODY } from '../http/errors.js';
import { presentLead } from './present.js';
import { findLeadRecords } from './read-repository.js';

type LeadResponse = { data: components['schemas']['Lead'] };

export function getLeadHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    const id = Number(req.params.id);
    const [record] = Number.isSafeInteger(id) ? await findLeadRecords(ctx.db, authOf(req).workspaceId, [id]) : [];
    if (!record) throw new ApiError(404, NOT_FOUND_BODY);
    const body: LeadResponse = { data: presentLead(record) };
    res.json(body);
  };
}
