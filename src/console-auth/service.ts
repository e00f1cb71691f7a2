import { recordUserChange, type Actor } from '../audit/service.js';
import type { Config } from '../config.js';
import type { Db, Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { Refused } from '../refused.js';
import { findUser, roleHasPermission, type Role } from '../users/repository.js';
import { checkPassword, hashPassword, verifyPassword } from './passwords.js';
import {
  clearSignInFailures,
  deleteDeadSignIns,
  deleteSessionsOfUser,
  purgeEndedSignIns,
  deleteSession,
  findLiveSession,
  findPasswordHash,
  findPasswordUsers,
  insertSession,
  insertSignInLink,
  listLiveSessions,
  purgeSignInFailures,
  redeemSignInLink,
  setPasswordHash,
  touchSession,
} from './repository.js';
import { byAddress, byEmail, SIGN_IN_REFUSED, SIGN_IN_THROTTLED, THROTTLE, throttledCheck } from './throttle.js';
import { looksLikeToken, newToken, tokenHash } from './tokens.js';

// Signing in to the console: single-use links an operator mints, passwords, sessions.

export const SIGN_IN_LINK_MINUTES = 15;

/** How long a session lasts unused and in all (SESSION_IDLE_MINUTES, SESSION_MAX_HOURS). */
export interface SessionLimits {
  idleSeconds: number;
  maxSeconds: number;
}
export const sessionLimitsOf = (config: Pick<Config, 'SESSION_IDLE_MINUTES' | 'SESSION_MAX_HOURS'>): SessionLimits => ({
  idleSeconds: config.SESSION_IDLE_MINUTES * 60,
  maxSeconds: config.SESSION_MAX_HOURS * 60 * 60,
});

/** A session's last use is written at most this often, not on every page. */
const TOUCH_AFTER_SECONDS = 60;
export const SIGN_IN_LINK_PATH = '/console/sign-in/link';

/** An email can belong to users of several workspaces: the first few with a password are tried. */
const MAX_USERS_PER_EMAIL = 5;

export interface ConsoleUser {
  workspaceId: number;
  workspaceName: string;
  userId: number;
  email: string;
  role: Role;
  /** Holds `update-companies`: may change things; members only read. */
  canChange: boolean;
  /** Seconds since this session began (a first password is set only soon after a link's sign-in). */
  sessionAgeSeconds: number;
}

async function requireUser(db: Executor, userId: number) {
  const user = await findUser(db, userId);
  if (!user) throw new Refused('not_found', `User ${userId} does not exist.`);
  return user;
}

/**
 * `console link --user U` (the operator) or the console's Members page (an admin): a link that
 * signs U in once within 15 minutes; U's earlier unused links stop working. An admin cannot
 * mint one for another admin (it would let them sign in as that admin): the CLI can.
 */
export async function mintSignInLink(db: Db, actor: Actor, publicUrl: string, userId: number) {
  const user = await requireUser(db, userId);
  const mintedBy = actor.kind === 'user' ? actor.userId : null;
  if (mintedBy !== null && user.id !== mintedBy && user.role === 'admin') {
    throw new Refused(
      'permission_denied',
      `${user.email} is an admin: an admin cannot mint a sign-in link for another admin. An operator can, with \`console link --user ${user.id}\`.`,
    );
  }
  const token = newToken();
  const { expires_at } = await inTransaction(db, async (trx) => {
    const link = await insertSignInLink(trx, {
      token_hash: tokenHash(token),
      workspace_id: user.workspace_id,
      user_id: user.id,
      expires_at: new Date(Date.now() + SIGN_IN_LINK_MINUTES * 60_000),
      minted_by: mintedBy,
    });
    await recordUserChange(trx, actor, user, 'sign_in_link.minted');
    return link;
  });
  // The token rides in the fragment: browsers never send it, so no request log, proxy or
  // link previewer sees it; the page posts it when the person presses Sign in.
  return { url: `${publicUrl}${SIGN_IN_LINK_PATH}#${token}`, expires_at };
}

/** `user set-password --id U`: every session of U ends (whoever held one signs in again). */
export async function setUserPassword(db: Executor, actor: Actor, userId: number, password: string) {
  checkPassword(password);
  await requireUser(db, userId);
  const hash = await hashPassword(password);
  return inTransaction(db, async (trx) => {
    const updated = await setPasswordHash(trx, userId, hash);
    if (!updated) throw new Refused('not_found', `User ${userId} does not exist.`);
    await deleteSessionsOfUser(trx, userId);
    await recordUserChange(trx, actor, updated, 'password.set');
    return { id: updated.id, password_set: true };
  });
}

/**
 * The console's "Your password": a signed-in user sets their own. When one is set already it
 * must be given first, and wrong ones count against the email's sign-in throttle, so a
 * session left open is not a way to guess it. A first password (a user who signed in by link)
 * is set only within the link's minutes after that sign-in. Every session of the user ends;
 * the returned token is this browser's new one.
 */
export async function changeOwnPassword(db: Db, actor: Actor, user: ConsoleUser, change: { current: string; next: string }, limits: SessionLimits): Promise<string> {
  checkPassword(change.next);
  const stored = (await findPasswordHash(db, user.userId))?.password_hash ?? null;
  if (stored === null && user.sessionAgeSeconds > SIGN_IN_LINK_MINUTES * 60) {
    throw new Refused(
      'invalid_argument',
      `A first password is set within ${SIGN_IN_LINK_MINUTES} minutes of signing in with a link. Ask an operator for a new sign-in link and set it then.`,
    );
  }
  if (stored !== null) {
    const checked = await throttledCheck(db, [byEmail(user.email.toLowerCase())], async () => {
      const right = await verifyPassword(stored, change.current);
      return { failed: !right, result: right };
    });
    if (checked === null) throw new Refused('throttled', SIGN_IN_THROTTLED);
    if (!checked) throw new Refused('invalid_argument', 'The current password is wrong.');
  }
  const hash = await hashPassword(change.next);
  return inTransaction(db, async (trx) => {
    const updated = await setPasswordHash(trx, user.userId, hash);
    if (!updated) throw new Refused('not_found', `User ${user.userId} does not exist.`);
    await deleteSessionsOfUser(trx, user.userId);
    await recordUserChange(trx, actor, updated, 'password.set');
    return startSession(trx, { workspace_id: user.workspaceId, user_id: user.userId }, limits);
  });
}

async function startSession(db: Executor, user: { workspace_id: number; user_id: number }, limits: SessionLimits, previousToken?: unknown): Promise<string> {
  // The browser's earlier session ends: one browser holds one session.
  await signOut(db, previousToken);
  await deleteDeadSignIns(db, user.user_id, limits.idleSeconds);
  const token = newToken();
  await insertSession(db, {
    token_hash: tokenHash(token),
    workspace_id: user.workspace_id,
    user_id: user.user_id,
    expires_at: new Date(Date.now() + limits.maxSeconds * 1000),
  });
  return token;
}

/**
 * A sign-in link's token: a new session's token, or null when it is unknown, used or expired.
 * It also lifts the lock wrong passwords put on the user's email: the owner of an email
 * someone else locked is back in with a link.
 */
export async function redeemLink(db: Executor, token: unknown, limits: SessionLimits, previousToken?: unknown): Promise<string | null> {
  if (!looksLikeToken(token)) return null;
  const link = await redeemSignInLink(db, tokenHash(token));
  if (!link) return null;
  const user = await findUser(db, link.user_id);
  if (user) await clearSignInFailures(db, byEmail(user.email.toLowerCase()).key);
  return startSession(db, link, limits, previousToken);
}

export type PasswordSignIn = { signedIn: true; sessionToken: string } | { signedIn: false; message: string };

export async function signInWithPassword(
  db: Db,
  attempt: { email: string; password: string; address: string; previousToken?: unknown },
  limits: SessionLimits,
): Promise<PasswordSignIn> {
  const email = attempt.email.trim().toLowerCase();
  const throttled = [byEmail(email), byAddress(attempt.address)];
  const subjects = throttled.map((subject) => subject.key);
  const signedIn = await throttledCheck(db, throttled, async () => {
    const users = email === '' || attempt.password === '' ? [] : await findPasswordUsers(db, email, MAX_USERS_PER_EMAIL);
    for (const user of users) {
      if (await verifyPassword(user.password_hash, attempt.password)) return { failed: false, result: user };
    }
    if (users.length === 0) await verifyPassword(null, attempt.password);
    return { failed: true, result: undefined };
  });
  if (signedIn === null) return { signedIn: false, message: SIGN_IN_THROTTLED };
  if (signedIn === undefined) return { signedIn: false, message: SIGN_IN_REFUSED };
  await purgeSignInFailures(db, subjects, THROTTLE.windowSeconds);
  return { signedIn: true, sessionToken: await startSession(db, { workspace_id: signedIn.workspace_id, user_id: signedIn.id }, limits, attempt.previousToken) };
}

/** The signed-in user of a session token, or null (no such session, idle or past its end). */
export async function resolveSession(db: Executor, token: unknown, limits: SessionLimits): Promise<ConsoleUser | null> {
  if (!looksLikeToken(token)) return null;
  const hash = tokenHash(token);
  const session = await findLiveSession(db, hash, limits.idleSeconds);
  if (!session) return null;
  if (session.idle_seconds > TOUCH_AFTER_SECONDS) await touchSession(db, hash);
  return {
    workspaceId: session.workspace_id,
    workspaceName: session.workspace_name,
    userId: session.user_id,
    email: session.email,
    role: session.role,
    canChange: roleHasPermission(session.role, 'update-companies'),
    sessionAgeSeconds: session.age_seconds,
  };
}

export async function signOut(db: Executor, token: unknown): Promise<void> {
  if (looksLikeToken(token)) await deleteSession(db, tokenHash(token));
}

/** "Sign out everywhere": every session of the user ends, this one included. */
export const signOutEverywhere = (db: Executor, userId: number) => deleteSessionsOfUser(db, userId);

/** The user's live sessions for "Sessions" under Your password, the one of this browser marked. */
export async function listSessions(db: Executor, userId: number, currentToken: string, limits: SessionLimits) {
  const current = tokenHash(currentToken);
  const sessions = await listLiveSessions(db, userId, limits.idleSeconds);
  return sessions.map(({ token_hash, ...session }) => ({ ...session, current: token_hash.equals(current) }));
}

/** Housekeeping: what no sign-in can use any more. */
export const purgeSignIns = (db: Executor, limits: SessionLimits): Promise<void> => purgeEndedSignIns(db, limits.idleSeconds, THROTTLE.windowSeconds);
