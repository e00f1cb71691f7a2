import type { Request, Router } from 'express';
import type { AppContext } from '../../context.js';
import { parseBranch, parseTimeWindow } from '../../deliveries/input.js';
import { parseTimestamp } from '../../input.js';
import { listWorkspaceConnectors } from '../../connectors/service.js';
import { listDeliveryPage } from '../../deliveries/log-repository.js';
import { deliveryShownToReader, recoverDeliveries, replayDelivery, showDelivery } from '../../deliveries/service.js';
import { Refused } from '../../refused.js';
import { listWorkspaceWorkflows } from '../../workflows/service.js';
import { noticeOf } from '../notices.js';
import { actorOf, signedIn } from '../session.js';
import { render } from '../views.js';
import { pathId, query, text } from './form.js';

const PAGE_SIZE = 100;
const idFilter = (value: unknown): number | undefined => {
  const given = query(value);
  return given !== undefined && /^[1-9]\d{0,15}$/.test(given) ? Number(given) : undefined;
};
/** A datetime-local field (no zone) is UTC, as the form says. */
export const utc = (value: string): string => (/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);

function filterOf(req: Request) {
  const branch = query(req.query.branch);
  const since = query(req.query.since);
  const until = query(req.query.until);
  return {
    connectorId: idFilter(req.query.connector),
    workflowId: idFilter(req.query.workflow),
    leadId: idFilter(req.query.lead),
    branch: branch === undefined ? undefined : parseBranch(branch),
    since: since === undefined ? undefined : parseTimestamp(utc(since), 'Since'),
    until: until === undefined ? undefined : parseTimestamp(utc(until), 'Until'),
  };
}

export function addDeliveryRoutes(router: Router, ctx: AppContext): void {
  router.get('/deliveries', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const filter = filterOf(req);
    const [page, connectors, workflows] = await Promise.all([
      listDeliveryPage(ctx.db, workspaceId, { ...filter, before: idFilter(req.query.before), limit: PAGE_SIZE }),
      listWorkspaceConnectors(ctx.db, workspaceId),
      listWorkspaceWorkflows(ctx.db, workspaceId),
    ]);
    const kept = Object.entries(req.query).filter(([key, value]) => key !== 'before' && key !== 'notice' && typeof value === 'string' && value !== '') as Array<[string, string]>;
    const nextQuery = page.next === null ? null : new URLSearchParams([...kept, ['before', String(page.next)]]).toString();
    render(res, 'deliveries', {
      title: 'Deliveries',
      page: 'deliveries',
      notice: noticeOf(req),
      deliveries: page.deliveries,
      nextQuery,
      connectors,
      workflows,
      form: Object.fromEntries(kept),
    });
  });

  router.get('/deliveries/:id', async (req, res) => {
    const { workspaceId, canChange } = signedIn(res).user;
    // Scoped to the session's workspace: another workspace's delivery is refused as a missing one.
    const id = pathId(req.params.id);
    const delivery = await showDelivery(ctx.db, id, workspaceId);
    const shown = canChange ? delivery : await deliveryShownToReader(ctx.db, delivery);
    render(res, 'delivery', { title: `Delivery ${id}`, page: 'deliveries', notice: noticeOf(req), delivery: shown });
  });

  router.post('/deliveries/:id/replay', async (req, res) => {
    const id = pathId(req.params.id);
    await replayDelivery(ctx.db, actorOf(req, res), id, signedIn(res).user.workspaceId);
    res.redirect(303, `/console/deliveries/${id}?notice=replayed`);
  });

  router.post('/deliveries/recover', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const connector = text(req.body, 'connector');
    const workflow = text(req.body, 'workflow');
    if ((connector === '') === (workflow === '')) throw new Refused('invalid_argument', 'Choose exactly one connector or workflow.');
    const endpoint = connector !== '' ? { connectorId: pathId(connector) } : { workflowId: pathId(workflow) };
    const until = text(req.body, 'until');
    const window = parseTimeWindow(utc(text(req.body, 'since')), until === '' ? undefined : utc(until));
    const result = await recoverDeliveries(ctx.db, actorOf(req, res), endpoint, window, workspaceId);
    render(res, 'recovered', { title: 'Recovered', page: 'deliveries', result, endpoint, window });
  });
}
