import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Actor } from '../audit/service.js';
import type { Config } from '../config.js';
import type { Db } from '../db/connect.js';
import { resolveSession, sessionLimitsOf, type ConsoleUser } from '../console-auth/service.js';
import { csrfTokenFor, sameSecret } from '../console-auth/tokens.js';
import { ConsoleError } from './errors.js';

// The console's session cookie, its CSRF token and the checks every request passes.

export interface SignedIn {
  user: ConsoleUser;
  /** The form token of this session: every POST carries it as `_csrf`. */
  csrf: string;
  sessionToken: string;
}

/** `Secure` and the `__Host-` prefix only over https: browsers refuse both on plain-http localhost. */
const secureCookies = (config: Config) => config.PUBLIC_URL.startsWith('https://');
export const sessionCookieName = (config: Config) => (secureCookies(config) ? '__Host-console_session' : 'console_session');

function cookieAttributes(config: Config, maxAgeSeconds: number): string {
  // __Host- requires Path=/; without it the cookie stays under /console.
  return `Path=${secureCookies(config) ? '/' : '/console'}; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secureCookies(config) ? '; Secure' : ''}`;
}

export function setSessionCookie(res: Response, config: Config, token: string): void {
  res.append('Set-Cookie', `${sessionCookieName(config)}=${token}; ${cookieAttributes(config, sessionLimitsOf(config).maxSeconds)}`);
}

export function clearSessionCookie(res: Response, config: Config): void {
  res.append('Set-Cookie', `${sessionCookieName(config)}=; ${cookieAttributes(config, 0)}`);
}

export function readSessionCookie(req: Request, config: Config): string | undefined {
  const name = sessionCookieName(config);
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * Every POST comes from a page of this console: the browser says so with Sec-Fetch-Site or
 * Origin (a request with neither is no browser's form, and is refused too).
 */
export function sameOriginPosts(config: Config): RequestHandler {
  const publicOrigin = new URL(config.PUBLIC_URL).origin;
  return (req, _res, next) => {
    if (req.method !== 'POST') return next();
    const site = req.headers['sec-fetch-site'];
    const origin = req.headers.origin;
    const ownOrigin = `${req.protocol}://${req.headers.host ?? ''}`;
    if (site !== undefined && site !== 'same-origin') return next(new ConsoleError(403, 'This form was sent from another site; nothing was changed.'));
    if (origin !== undefined && origin !== publicOrigin && origin !== ownOrigin) return next(new ConsoleError(403, 'This form was sent from another site; nothing was changed.'));
    if (site === undefined && origin === undefined) return next(new ConsoleError(403, 'The browser did not say where this form came from; nothing was changed.'));
    next();
  };
}

/** Where plain http is allowed: this machine only (development and tests). */
const LOCAL_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * The console's cookie and password travel only over TLS: with an http:// PUBLIC_URL (set or
 * derived) naming anything but this machine, every console page is refused.
 */
export function requireHttps(config: Config): RequestHandler {
  const url = new URL(config.PUBLIC_URL);
  const allowed = url.protocol === 'https:' || LOCAL_HOSTS.includes(url.hostname);
  return (_req, _res, next) => {
    if (allowed) return next();
    next(new ConsoleError(403, 'The console is served over HTTPS only. Set PUBLIC_URL to its https:// address (see the README, "HTTPS").'));
  };
}

export const signedIn = (res: Response): SignedIn => res.locals.signedIn as SignedIn;

/** Who makes a change from the console, for its audit entry: the signed-in user, from the client's address (as TRUST_PROXY lets express see it). */
export function actorOf(req: Request, res: Response): Actor {
  const { user } = signedIn(res);
  return { kind: 'user', userId: user.userId, email: user.email, address: req.ip ?? req.socket.remoteAddress ?? null };
}

/** A live session, or the sign-in page (a GET) or 401 (anything else); then the CSRF token of every POST. */
export function requireSession(db: Db, config: Config): RequestHandler {
  const limits = sessionLimitsOf(config);
  return async (req: Request, res: Response, next: NextFunction) => {
    const token = readSessionCookie(req, config);
    const user = token === undefined ? null : await resolveSession(db, token, limits);
    if (!user || token === undefined) {
      if (token !== undefined) clearSessionCookie(res, config);
      if (req.method === 'GET') return res.redirect(303, '/console/sign-in');
      return next(new ConsoleError(401, 'Your session has ended. Sign in again; nothing was changed.'));
    }
    const csrf = csrfTokenFor(token);
    if (req.method === 'POST') {
      const given = (req.body as Record<string, unknown> | undefined)?._csrf;
      if (typeof given !== 'string' || !sameSecret(given, csrf))
        return next(new ConsoleError(403, 'This form has expired or was not sent from this console; nothing was changed. Reload the page and try again.'));
    }
    const session: SignedIn = { user, csrf, sessionToken: token };
    res.locals.signedIn = session;
    next();
  };
}

/** Changes need `update-companies` (admins); members read. */
export const requireChangeRight: RequestHandler = (_req, res, next) => {
  const { user } = signedIn(res);
  if (!user.canChange) return next(new ConsoleError(403, `Your role (${user.role}) can look but not change anything: changes need the update-companies permission.`));
  next();
};
