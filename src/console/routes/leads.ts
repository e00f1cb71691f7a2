import type { Response, Router } from 'express';
import type { AppContext } from '../../context.js';
import { listWorkspaceConnectors, pushLead } from '../../connectors/service.js';
import { listDeliveries } from '../../deliveries/repository.js';
import { findCrmRecordId, listLeadPage } from '../../leads/list-repository.js';
import { loadLeads } from '../../leads/read-service.js';
import { leadsCsv } from '../../leads/export-service.js';
import { listTags } from '../../tags/repository.js';
import { requireInWorkspace } from '../../workspaces/owned.js';
import { ConsoleError, NOT_FOUND } from '../errors.js';
import { signedIn } from '../session.js';
import { render } from '../views.js';
import { optionalId, pathId, query, text } from './form.js';

const PAGE_SIZE = 50;
const LEAD_DELIVERIES = 50;

async function renderLead(res: Response, ctx: AppContext, leadId: number, extra: Record<string, unknown> = {}, status = 200) {
  const workspaceId = signedIn(res).user.workspaceId;
  const lead = (await loadLeads(ctx.db, [{ id: leadId, workspace_id: workspaceId }])).get(leadId);
  if (!lead) throw new ConsoleError(404, NOT_FOUND);
  const [crmRecordId, deliveries, connectors] = await Promise.all([
    findCrmRecordId(ctx.db, workspaceId, leadId),
    listDeliveries(ctx.db, workspaceId, { leadId, limit: LEAD_DELIVERIES }),
    listWorkspaceConnectors(ctx.db, workspaceId),
  ]);
  render(res, 'lead', { title: lead.name, page: 'leads', lead, crmRecordId, deliveries: deliveries.reverse(), connectors, ...extra }, status);
}

export function addLeadRoutes(router: Router, ctx: AppContext): void {
  router.get('/leads', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const search = query(req.query.search)?.slice(0, 255);
    const tagId = optionalId(req.query.tag);
    const [page, tags] = await Promise.all([
      listLeadPage(ctx.db, workspaceId, { search, tagId, before: optionalId(req.query.before), limit: PAGE_SIZE }),
      listTags(ctx.db, workspaceId, true),
    ]);
    const nextQuery =
      page.next === null ? null : new URLSearchParams({ ...(search ? { search } : {}), ...(tagId ? { tag: String(tagId) } : {}), before: String(page.next) }).toString();
    const exportQuery = new URLSearchParams({ ...(search ? { search } : {}), ...(tagId ? { tag: String(tagId) } : {}) }).toString();
    render(res, 'leads', { title: 'Leads', page: 'leads', leads: page.rows, tags, search: search ?? '', tagId, nextQuery, exportQuery });
  });

  router.get('/leads/export.csv', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    res.type('text/csv; charset=utf-8').attachment('leads.csv');
    for await (const chunk of leadsCsv(ctx.db, workspaceId, { search: query(req.query.search)?.slice(0, 255), tagId: optionalId(req.query.tag) })) {
      if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
  });

  router.get('/leads/:id', async (req, res) => {
    await renderLead(res, ctx, pathId(req.params.id));
  });

  router.post('/leads/:id/push', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const leadId = await requireInWorkspace(ctx.db, workspaceId, 'leads', pathId(req.params.id));
    const connectorId = pathId(text(req.body, 'connector'));
    const pushResult = await pushLead(ctx, connectorId, leadId, workspaceId);
    await renderLead(res, ctx, leadId, { pushResult, pushedTo: connectorId });
  });
}
