import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { mintSignInLink } from '../../console-auth/service.js';
import { findUser } from '../../users/repository.js';
import { parseEmail, parseRole } from '../../users/input.js';
import { addMember, listWorkspaceMembers } from '../../users/service.js';
import { changeRole, removeMember } from '../../workspaces/members.js';
import { requireInWorkspace } from '../../workspaces/owned.js';
import { noticeOf } from '../notices.js';
import { actorOf, signedIn } from '../session.js';
import { render } from '../views.js';
import { pathId, text } from './form.js';

export function addMemberRoutes(router: Router, ctx: AppContext): void {
  router.get('/members', async (req, res) => {
    const members = await listWorkspaceMembers(ctx.db, signedIn(res).user.workspaceId);
    render(res, 'members', { title: 'Members', page: 'members', notice: noticeOf(req), members });
  });

  router.post('/members', async (req, res) => {
    await addMember(
      ctx.db,
      actorOf(req, res),
      signedIn(res).user.workspaceId,
      parseEmail(text(req.body, 'email'), 'Email'),
      parseRole(text(req.body, 'role') || undefined, 'Role'),
    );
    res.redirect(303, '/console/members?notice=member-saved');
  });

  router.post('/members/:id/role', async (req, res) => {
    const id = pathId(req.params.id);
    await changeRole(ctx.db, actorOf(req, res), signedIn(res).user.workspaceId, id, parseRole(text(req.body, 'role'), 'Role'), (prefixes) =>
      prefixes.forEach((prefix) => ctx.apiKeyCache.changedHere(prefix)),
    );
    // Their sessions ended: an admin who changed their own role signs in again.
    res.redirect(303, id === signedIn(res).user.userId ? '/console/sign-in' : '/console/members?notice=member-saved');
  });

  // The CLI's `console link --user U`, for a member's first sign-in or a forgotten password.
  router.post('/members/:id/sign-in-link', async (req, res) => {
    const id = await requireInWorkspace(ctx.db, signedIn(res).user.workspaceId, 'users', pathId(req.params.id));
    const link = await mintSignInLink(ctx.db, actorOf(req, res), ctx.config.PUBLIC_URL, id);
    const member = (await findUser(ctx.db, id))!;
    render(res, 'sign-in-link-created', { title: 'Sign-in link', page: 'members', member, link });
  });

  router.get('/members/:id/remove', async (req, res) => {
    const id = await requireInWorkspace(ctx.db, signedIn(res).user.workspaceId, 'users', pathId(req.params.id));
    const member = (await listWorkspaceMembers(ctx.db, signedIn(res).user.workspaceId)).find((row) => row.id === id)!;
    render(res, 'confirm', {
      title: `Remove ${member.email}?`,
      page: 'members',
      action: `/console/members/${id}/remove`,
      button: 'Remove member',
      back: '/console/members',
      explanation: `Their ${member.keys} API key(s) become orphaned and are refused from then on, and their console sessions end.`,
    });
  });

  router.post('/members/:id/remove', async (req, res) => {
    const id = pathId(req.params.id);
    // Their keys are refused at once by this process, not only once the notification is back.
    await removeMember(ctx.db, actorOf(req, res), signedIn(res).user.workspaceId, id, (prefixes) => prefixes.forEach((prefix) => ctx.apiKeyCache.changedHere(prefix)));
    res.redirect(303, id === signedIn(res).user.userId ? '/console/sign-in' : '/console/members?notice=member-removed');
  });
}
