import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { deliveriesPerDay, failingEndpoints, leadsPerDay, workspaceCounts } from '../../workspaces/overview-repository.js';
import { dailyBars } from '../chart.js';
import { signedIn } from '../session.js';
import { render } from '../views.js';

const DAYS = 30;

export function addOverviewRoutes(router: Router, ctx: AppContext): void {
  router.get('/', async (_req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const [leads, deliveries, failing, counts] = await Promise.all([
      leadsPerDay(ctx.db, workspaceId, DAYS), deliveriesPerDay(ctx.db, workspaceId, DAYS), failingEndpoints(ctx.db, workspaceId), workspaceCounts(ctx.db, workspaceId),
    ]);
    render(res, 'overview', {
      title: 'Overview', page: 'overview', counts, failing,
      leads: dailyBars(leads, ['created', 'updated'], 'Leads created and updated per day'),
      deliveries: dailyBars(deliveries, ['Delivered', 'Failed'], 'Deliveries Delivered and Failed per day'),
    });
  });
}
