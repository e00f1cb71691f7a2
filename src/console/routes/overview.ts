import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { urlShownTo } from '../../deliveries/masking.js';
import { dailyCounts } from '../../leads/daily-counts-repository.js';
import { deliveriesPerDay, failingEndpoints, workspaceCounts } from '../../workspaces/overview-repository.js';
import { dailyBars } from '../chart.js';
import { signedIn } from '../session.js';
import { render } from '../views.js';

const DAYS = 30;

export function addOverviewRoutes(router: Router, ctx: AppContext): void {
  router.get('/', async (_req, res) => {
    const { workspaceId, canChange } = signedIn(res).user;
    const [leads, deliveries, failing, counts] = await Promise.all([
      dailyCounts(ctx.db, workspaceId, DAYS),
      deliveriesPerDay(ctx.db, workspaceId, DAYS),
      failingEndpoints(ctx.db, workspaceId),
      workspaceCounts(ctx.db, workspaceId),
    ]);
    render(res, 'overview', {
      title: 'Overview',
      page: 'overview',
      counts,
      // Masked as on the Connectors and Workflows pages: the Overview is every role's first page.
      failing: failing.map((endpoint) => ({ ...endpoint, url: endpoint.url === null ? null : urlShownTo(endpoint.url, canChange) })),
      leads: dailyBars(
        leads,
        [
          { key: 'created', name: 'created', colour: 'a' },
          { key: 'updated', name: 'updated', colour: 'b' },
          { key: 'skipped', name: 'skipped', colour: 'muted' },
          { key: 'failed', name: 'failed', colour: 'bad' },
        ],
        'Leads created, updated, skipped and failed per day',
      ),
      deliveries: dailyBars(
        deliveries,
        [
          { key: 'a', name: 'Delivered', colour: 'good' },
          { key: 'b', name: 'Failed', colour: 'bad' },
        ],
        'Deliveries Delivered and Failed per day',
      ),
    });
  });
}
