import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { changeOwnPassword, listSessions, sessionLimitsOf, signOutEverywhere } from '../../console-auth/service.js';
import { findPasswordHash } from '../../console-auth/repository.js';
import { noticeOf } from '../notices.js';
import { actorOf, clearSessionCookie, setSessionCookie, signedIn } from '../session.js';
import { render } from '../views.js';
import { text } from './form.js';

/**
 * "Your password": every signed-in user, members included, sets their own (it changes nothing
 * of the workspace, so it is mounted before the change right), sees their sessions and can end
 * them all. The CLI's side is `user set-password --id U`.
 */
export function addPasswordRoutes(router: Router, ctx: AppContext): void {
  const limits = sessionLimitsOf(ctx.config);

  router.get('/password', async (req, res) => {
    const { user, sessionToken } = signedIn(res);
    const stored = await findPasswordHash(ctx.db, user.userId);
    const sessions = await listSessions(ctx.db, user.userId, sessionToken, limits);
    render(res, 'password', { title: 'Your password', page: 'password', notice: noticeOf(req), passwordSet: stored?.password_hash != null, sessions });
  });

  // Every session of the user ends; this browser gets a new one, the others sign in again.
  router.post('/password', async (req, res) => {
    const { user } = signedIn(res);
    const sessionToken = await changeOwnPassword(ctx.db, actorOf(req, res), user, { current: text(req.body, 'current_password'), next: text(req.body, 'new_password') }, limits);
    setSessionCookie(res, ctx.config, sessionToken);
    res.redirect(303, '/console/password?notice=password-set');
  });

  router.post('/password/sign-out-everywhere', async (_req, res) => {
    await signOutEverywhere(ctx.db, signedIn(res).user.userId);
    clearSessionCookie(res, ctx.config);
    res.redirect(303, '/console/sign-in');
  });
}
