import type { Request, Response, Router } from 'express';
import type { AppContext } from '../../context.js';
import { erasePerson } from '../../erasure/service.js';
import { exportPerson } from '../../person-export/service.js';
import { requireInWorkspace } from '../../workspaces/owned.js';
import { actorOf, requireChangeRight, signedIn } from '../session.js';
import { render } from '../views.js';
import { checked, pathId } from './form.js';

// A lead's personal data (admins): Erase person, its confirmation with the suppression box, and
// Download data. The services are the CLI's `lead erase` and `lead export`.

export function addLeadErasureRoutes(router: Router, ctx: AppContext): void {
  // Reading another person's whole record, or asking to erase it, is an admin's act like the erasure itself.
  router.get(['/leads/:id/erase', '/leads/:id/export'], requireChangeRight);

  router.get('/leads/:id/erase', async (req, res) => {
    const leadId = await requireInWorkspace(ctx.db, signedIn(res).user.workspaceId, 'leads', pathId(req.params.id));
    render(res, 'lead-erase', { title: `Erase lead ${leadId}?`, page: 'leads', leadId });
  });

  router.post('/leads/:id/erase', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const leadId = await requireInWorkspace(ctx.db, workspaceId, 'leads', pathId(req.params.id));
    const result = await erasePerson(ctx.db, { workspaceId, person: { id: leadId }, suppress: checked(req.body, 'suppress'), actor: actorOf(req, res) });
    render(res, 'lead-erased', { title: 'Person erased', page: 'leads', result });
  });

  router.get('/leads/:id/export', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const leadId = await requireInWorkspace(ctx.db, workspaceId, 'leads', pathId(req.params.id));
    const document = await exportPerson(ctx.db, { workspaceId, person: { id: leadId }, actor: actorOf(req, res) });
    res
      .attachment(`lead-${leadId}-data.json`)
      .type('application/json')
      .send(`${JSON.stringify(document, null, 2)}\n`);
  });
}
