import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { parseTagColour, parseTagName } from '../../tags/input.js';
import { listTags } from '../../tags/repository.js';
import { createTag, updateTag } from '../../tags/service.js';
import { noticeOf } from '../notices.js';
import { actorOf, signedIn } from '../session.js';
import { render } from '../views.js';
import { checked, pathId, text } from './form.js';

const colour = (body: unknown) => {
  const value = text(body, 'color').trim();
  return value === '' ? null : parseTagColour(value, 'Colour');
};

export function addTagRoutes(router: Router, ctx: AppContext): void {
  router.get('/tags', async (req, res) => {
    const archived = req.query.archived === '1';
    const tags = await listTags(ctx.db, signedIn(res).user.workspaceId, archived);
    render(res, 'tags', { title: 'Tags', page: 'tags', notice: noticeOf(req), tags, archived });
  });

  router.post('/tags', async (req, res) => {
    await createTag(ctx.db, actorOf(req, res), signedIn(res).user.workspaceId, {
      name: parseTagName(text(req.body, 'name'), 'Name'),
      color: colour(req.body),
      active: !checked(req.body, 'archived'),
    });
    res.redirect(303, '/console/tags?notice=tag-saved');
  });

  router.post('/tags/:id', async (req, res) => {
    const id = pathId(req.params.id);
    const action = text(req.body, 'action');
    const changes =
      action === 'archive' ? { active: false } : action === 'restore' ? { active: true } : { name: parseTagName(text(req.body, 'name'), 'Name'), color: colour(req.body) };
    await updateTag(ctx.db, actorOf(req, res), id, changes, signedIn(res).user.workspaceId);
    res.redirect(303, `/console/tags?notice=tag-saved${action === 'restore' || action === 'archive' ? '&archived=1' : ''}`);
  });
}
