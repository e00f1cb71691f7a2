import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { redeemLink, sessionLimitsOf, signInWithPassword, signOut } from '../../console-auth/service.js';
import { SIGN_IN_THROTTLED } from '../../console-auth/throttle.js';
import { clearSessionCookie, readSessionCookie, setSessionCookie } from '../session.js';
import { render } from '../views.js';
import { text } from './form.js';

/** Sign-in by password and by link (before any session), and sign-out (with one). */
export function addSignInRoutes(router: Router, ctx: AppContext): void {
  const limits = sessionLimitsOf(ctx.config);
  router.get('/sign-in', (_req, res) => {
    render(res, 'sign-in', { title: 'Sign in' });
  });
  router.post('/sign-in', async (req, res) => {
    const email = text(req.body, 'email');
    const result = await signInWithPassword(
      ctx.db,
      { email, password: text(req.body, 'password'), address: req.ip ?? req.socket.remoteAddress ?? 'unknown', previousToken: readSessionCookie(req, ctx.config) },
      limits,
    );
    if (!result.signedIn) {
      render(res, 'sign-in', { title: 'Sign in', message: result.message, email }, result.message === SIGN_IN_THROTTLED ? 429 : 401);
      return;
    }
    setSessionCookie(res, ctx.config, result.sessionToken);
    res.redirect(303, '/console');
  });

  // The link's token is in the fragment: this page only offers the button that posts it.
  router.get('/sign-in/link', (_req, res) => {
    render(res, 'sign-in-link', { title: 'Sign in' });
  });
  router.post('/sign-in/link', async (req, res) => {
    const sessionToken = await redeemLink(ctx.db, text(req.body, 'token'), limits, readSessionCookie(req, ctx.config));
    if (!sessionToken) {
      render(res, 'sign-in-link', { title: 'Sign in', message: 'This sign-in link was already used, has expired or is not valid. Ask an operator for a new one.' }, 400);
      return;
    }
    setSessionCookie(res, ctx.config, sessionToken);
    res.redirect(303, '/console');
  });
}

addSignInRoutes.signOut = (router: Router, ctx: AppContext): void => {
  router.post('/sign-out', async (req, res) => {
    await signOut(ctx.db, readSessionCookie(req, ctx.config));
    clearSessionCookie(res, ctx.config);
    res.redirect(303, '/console/sign-in');
  });
};
