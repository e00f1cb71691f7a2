import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { changeOwnPassword } from '../../console-auth/service.js';
import { findPasswordHash } from '../../console-auth/repository.js';
import { noticeOf } from '../notices.js';
import { signedIn } from '../session.js';
import { render } from '../views.js';
import { text } from './form.js';

/**
 * "Your password": every signed-in user, members included, sets their own (it changes nothing
 * of the workspace, so it is mounted before the change right). The CLI's side is
 * `user set-password --id U`.
 */
export function addPasswordRoutes(router: Router, ctx: AppContext): void {
  router.get('/password', async (req, res) => {
    const stored = await findPasswordHash(ctx.db, signedIn(res).user.userId);
    render(res, 'password', { title: 'Your password', page: 'password', notice: noticeOf(req), passwordSet: stored?.password_hash != null });
  });

  router.post('/password', async (req, res) => {
    const { user } = signedIn(res);
    await changeOwnPassword(ctx.db, user, { current: text(req.body, 'current_password'), next: text(req.body, 'new_password') });
    res.redirect(303, '/console/password?notice=password-set');
  });
}
