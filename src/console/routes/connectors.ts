import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { shownToReader } from '../../deliveries/masking.js';
import { createConnector, listWorkspaceConnectors } from '../../connectors/service.js';
import { connectorDeliveryStats } from '../../deliveries/stats-repository.js';
import { MAPPABLE_ATTRIBUTES } from '../../deliveries/payload.js';
import { noticeOf } from '../notices.js';
import { actorOf, signedIn } from '../session.js';
import { render } from '../views.js';
import { addConnectorPageRoutes } from './connector.js';
import { connectorFromForm } from './connector-form.js';

export const METHODS = ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'];

export function addConnectorRoutes(router: Router, ctx: AppContext): void {
  router.get('/connectors', async (req, res) => {
    const { workspaceId, canChange } = signedIn(res).user;
    const connectors = (await listWorkspaceConnectors(ctx.db, workspaceId)).map((connector) => (canChange ? connector : shownToReader(connector)));
    const stats = await connectorDeliveryStats(
      ctx.db,
      workspaceId,
      connectors.map((connector) => connector.id),
    );
    render(res, 'connectors', {
      title: 'Connectors',
      page: 'connectors',
      notice: noticeOf(req),
      connectors: connectors.map((connector) => ({ ...connector, stats: stats.get(connector.id) })),
    });
  });

  router.get('/connectors/new', (_req, res) => {
    render(res, 'connector-new', { title: 'New connector', page: 'connectors', methods: METHODS, attributes: MAPPABLE_ATTRIBUTES, form: {} });
  });

  router.post('/connectors', async (req, res) => {
    const { connector, maxPerSecond } = connectorFromForm(req.body, signedIn(res).user.workspaceId);
    const created = await createConnector(ctx.db, actorOf(req, res), connector, maxPerSecond);
    // The signing secret is shown in this answer, as `connector create` prints it; later only on Reveal.
    render(res, 'connector-created', { title: 'Connector saved', page: 'connectors', connector: created }, 201);
  });

  addConnectorPageRoutes(router, ctx);
}
