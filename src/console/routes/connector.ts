import type { Response, Router } from 'express';
import type { AppContext } from '../../context.js';
import { shownToReader } from '../../deliveries/masking.js';
import { parseBoolean } from '../../input.js';
import { deleteConnector, enableConnector, listWorkspaceConnectors, rotateSigningSecret, testConnector, updateConnector } from '../../connectors/service.js';
import { revealSigningSecret } from '../../connectors/signing-secret.js';
import { connectorDeliveryStats } from '../../deliveries/stats-repository.js';
import { Refused } from '../../refused.js';
import { requireInWorkspace } from '../../workspaces/owned.js';
import { ConsoleError, NOT_FOUND } from '../errors.js';
import { noticeOf } from '../notices.js';
import { actorOf, signedIn } from '../session.js';
import { render } from '../views.js';
import { capField } from './connector-form.js';
import { pathId, text } from './form.js';

const MAX_OVERLAP_HOURS = 720;

async function renderConnector(res: Response, ctx: AppContext, id: number, extra: Record<string, unknown> = {}) {
  const { workspaceId, canChange } = signedIn(res).user;
  const found = (await listWorkspaceConnectors(ctx.db, workspaceId)).find((row) => row.id === id);
  if (!found) throw new ConsoleError(404, NOT_FOUND);
  const connector = canChange ? found : shownToReader(found);
  const stats = (await connectorDeliveryStats(ctx.db, workspaceId, [id])).get(id);
  render(res, 'connector', { title: `Connector ${id}`, page: 'connectors', connector, stats, ...extra });
}

/** A connector's page and its buttons: Send test, auto-push and cap, Enable, secret reveal and rotate, Delete. */
export function addConnectorPageRoutes(router: Router, ctx: AppContext): void {
  const owned = (res: Response, id: unknown) => requireInWorkspace(ctx.db, signedIn(res).user.workspaceId, 'connectors', pathId(id));

  router.get('/connectors/:id', async (req, res) => {
    await renderConnector(res, ctx, pathId(req.params.id), { notice: noticeOf(req) });
  });

  router.post('/connectors/:id/test', async (req, res) => {
    const id = pathId(req.params.id);
    const testResult = await testConnector(ctx, id, signedIn(res).user.workspaceId);
    await renderConnector(res, ctx, id, { testResult });
  });

  router.post('/connectors/:id/update', async (req, res) => {
    const id = await owned(res, req.params.id);
    await updateConnector(ctx.db, actorOf(req, res), id, { autoPush: parseBoolean(text(req.body, 'auto_push') || 'off', 'Auto-push'), maxPerSecond: capField(req.body, true) });
    res.redirect(303, `/console/connectors/${id}?notice=connector-updated`);
  });

  router.post('/connectors/:id/enable', async (req, res) => {
    const id = await owned(res, req.params.id);
    await enableConnector(ctx.db, actorOf(req, res), id);
    res.redirect(303, `/console/connectors/${id}?notice=connector-enabled`);
  });

  router.post('/connectors/:id/reveal-secret', async (req, res) => {
    const id = await owned(res, req.params.id);
    await renderConnector(res, ctx, id, { secret: await revealSigningSecret(ctx.db, actorOf(req, res), id) });
  });

  router.post('/connectors/:id/rotate-secret', async (req, res) => {
    const id = await owned(res, req.params.id);
    const hours = text(req.body, 'overlap_hours').trim() || '24';
    if (!/^\d+$/.test(hours) || Number(hours) > MAX_OVERLAP_HOURS) {
      throw new Refused('invalid_argument', `Overlap must be a whole number of hours from 0 to ${MAX_OVERLAP_HOURS}, got "${hours}".`);
    }
    const rotated = await rotateSigningSecret(ctx.db, actorOf(req, res), id, Number(hours));
    await renderConnector(res, ctx, id, { secret: { signing_secret: rotated.signing_secret, previous_secret_signs_until: rotated.previous_secret_signs_until }, rotated: true });
  });

  router.get('/connectors/:id/delete', async (req, res) => {
    const id = await owned(res, req.params.id);
    render(res, 'confirm', {
      title: `Delete connector ${id}?`,
      page: 'connectors',
      action: `/console/connectors/${id}/delete`,
      button: 'Delete connector',
      back: `/console/connectors/${id}`,
      explanation: 'Nothing is sent to it any more, workflows that send to it fail with a configuration error, and its deliveries stay in the log.',
    });
  });

  router.post('/connectors/:id/delete', async (req, res) => {
    await deleteConnector(ctx.db, actorOf(req, res), await owned(res, req.params.id));
    res.redirect(303, '/console/connectors?notice=connector-deleted');
  });
}
