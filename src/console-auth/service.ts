import { setTimeout as sleep } from 'node:timers/promises';
import type { Executor } from '../db/connect.js';
import { Refused } from '../refused.js';
import { findUser, roleHasPermission, type Role } from '../users/repository.js';
import { checkPassword, hashPassword, verifyPassword } from './passwords.js';
import {
  countSignInFailures,
  deleteDeadSignIns,
  purgeEndedSignIns,
  deleteSession,
  findLiveSession,
  findPasswordHash,
  findPasswordUsers,
  insertSession,
  insertSignInLink,
  purgeSignInFailures,
  recordSignInFailures,
  redeemSignInLink,
  setPasswordHash,
  touchSession,
} from './repository.js';
import { looksLikeToken, newToken, tokenHash } from './tokens.js';

// Signing in to the console: single-use links an operator mints, passwords, sessions.

export const SIGN_IN_LINK_MINUTES = 15;
export const SESSION_IDLE_SECONDS = 12 * 60 * 60;
export const SESSION_MAX_SECONDS = 7 * 24 * 60 * 60;
/** A session's last use is written at most this often, not on every page. */
const TOUCH_AFTER_SECONDS = 60;
export const SIGN_IN_LINK_PATH = '/console/sign-in/link';

/**
 * Wrong passwords within the window: past `slowAfter` every attempt waits first, past
 * `refuseAfter` attempts are refused unchecked until the window has passed, per email (known
 * or not: the answer never tells) and per address (an office behind one address gets more).
 */
export const THROTTLE = {
  windowSeconds: 15 * 60,
  delayMs: 1000,
  email: { slowAfter: 5, refuseAfter: 10 },
  address: { slowAfter: 20, refuseAfter: 50 },
};
export const SIGN_IN_REFUSED = 'The email or password is wrong.';
export const SIGN_IN_THROTTLED = `Too many failed sign-ins. Try again in ${THROTTLE.windowSeconds / 60} minutes.`;
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
}

async function requireUser(db: Executor, userId: number) {
  const user = await findUser(db, userId);
  if (!user) throw new Refused('not_found', `User ${userId} does not exist.`);
  return user;
}

/** `console link --user U`: a link that signs U in once within 15 minutes. */
export async function mintSignInLink(db: Executor, publicUrl: string, userId: number) {
  const user = await requireUser(db, userId);
  const token = newToken();
  const { expires_at } = await insertSignInLink(db, {
    token_hash: tokenHash(token),
    workspace_id: user.workspace_id,
    user_id: user.id,
    expires_at: new Date(Date.now() + SIGN_IN_LINK_MINUTES * 60_000),
  });
  // The token rides in the fragment: browsers never send it, so no request log, proxy or
  // link previewer sees it; the page posts it when the person presses Sign in.
  return { url: `${publicUrl}${SIGN_IN_LINK_PATH}#${token}`, expires_at };
}

/** `user set-password --id U`. */
export async function setUserPassword(db: Executor, userId: number, password: string) {
  checkPassword(password);
  await requireUser(db, userId);
  const updated = await setPasswordHash(db, userId, await hashPassword(password));
  if (!updated) throw new Refused('not_found', `User ${userId} does not exist.`);
  return { id: updated.id, password_set: true };
}

type ThrottleSubject = { key: string; limits: { slowAfter: number; refuseAfter: number } };
const byEmail = (email: string): ThrottleSubject => ({ key: `email:${email}`, limits: THROTTLE.email });
const byAddress = (address: string): ThrottleSubject => ({ key: `address:${address}`, limits: THROTTLE.address });

/** The throttle, once for every password check: false when refused; past `slowAfter`, waits first. */
async function passThrottle(db: Executor, subjects: readonly ThrottleSubject[]): Promise<boolean> {
  const failures = await countSignInFailures(
    db,
    subjects.map((subject) => subject.key),
    THROTTLE.windowSeconds,
  );
  const count = (subject: ThrottleSubject) => failures.get(subject.key) ?? 0;
  if (subjects.some((subject) => count(subject) >= subject.limits.refuseAfter)) return false;
  if (subjects.some((subject) => count(subject) >= subject.limits.slowAfter)) await sleep(THROTTLE.delayMs);
  return true;
}

/**
 * The console's "Your password": a signed-in user sets their own. When one is set already it
 * must be given first, and wrong ones count against the email's sign-in throttle, so a
 * session left open is not a way to guess it.
 */
export async function changeOwnPassword(db: Executor, user: { userId: number; email: string }, change: { current: string; next: string }) {
  checkPassword(change.next);
  const stored = (await findPasswordHash(db, user.userId))?.password_hash ?? null;
  if (stored !== null) {
    const subjects = [byEmail(user.email.toLowerCase())];
    if (!(await passThrottle(db, subjects))) throw new Refused('throttled', SIGN_IN_THROTTLED);
    if (!(await verifyPassword(stored, change.current))) {
      await recordSignInFailures(
        db,
        subjects.map((subject) => subject.key),
      );
      throw new Refused('invalid_argument', 'The current password is wrong.');
    }
  }
  await setPasswordHash(db, user.userId, await hashPassword(change.next));
  return { id: user.userId, password_set: true };
}

async function startSession(db: Executor, user: { workspace_id: number; user_id: number }): Promise<string> {
  await deleteDeadSignIns(db, user.user_id, SESSION_IDLE_SECONDS);
  const token = newToken();
  await insertSession(db, {
    token_hash: tokenHash(token),
    workspace_id: user.workspace_id,
    user_id: user.user_id,
    expires_at: new Date(Date.now() + SESSION_MAX_SECONDS * 1000),
  });
  return token;
}

/** A sign-in link's token: a new session's token, or null when it is unknown, used or expired. */
export async function redeemLink(db: Executor, token: unknown): Promise<string | null> {
  if (!looksLikeToken(token)) return null;
  const link = await redeemSignInLink(db, tokenHash(token));
  return link ? startSession(db, link) : null;
}

export type PasswordSignIn = { signedIn: true; sessionToken: string } | { signedIn: false; message: string };

export async function signInWithPassword(db: Executor, attempt: { email: string; password: string; address: string }): Promise<PasswordSignIn> {
  const email = attempt.email.trim().toLowerCase();
  const throttled = [byEmail(email), byAddress(attempt.address)];
  if (!(await passThrottle(db, throttled))) return { signedIn: false, message: SIGN_IN_THROTTLED };
  const subjects = throttled.map((subject) => subject.key);

  const users = email === '' || attempt.password === '' ? [] : await findPasswordUsers(db, email, MAX_USERS_PER_EMAIL);
  for (const user of users) {
    if (await verifyPassword(user.password_hash, attempt.password)) {
      await purgeSignInFailures(db, subjects, THROTTLE.windowSeconds);
      return { signedIn: true, sessionToken: await startSession(db, { workspace_id: user.workspace_id, user_id: user.id }) };
    }
  }
  if (users.length === 0) await verifyPassword(null, attempt.password);
  await recordSignInFailures(db, subjects);
  return { signedIn: false, message: SIGN_IN_REFUSED };
}

/** The signed-in user of a session token, or null (no such session, idle for 12 h, or older than 7 days). */
export async function resolveSession(db: Executor, token: unknown): Promise<ConsoleUser | null> {
  if (!looksLikeToken(token)) return null;
  const hash = tokenHash(token);
  const session = await findLiveSession(db, hash, SESSION_IDLE_SECONDS);
  if (!session) return null;
  if (session.idle_seconds > TOUCH_AFTER_SECONDS) await touchSession(db, hash);
  return {
    workspaceId: session.workspace_id,
    workspaceName: session.workspace_name,
    userId: session.user_id,
    email: session.email,
    role: session.role,
    canChange: roleHasPermission(session.role, 'update-companies'),
  };
}

export async function signOut(db: Executor, token: unknown): Promise<void> {
  if (looksLikeToken(token)) await deleteSession(db, tokenHash(token));
}

/** Housekeeping: what no sign-in can use any more. */
export const purgeSignIns = (db: Executor): Promise<void> => purgeEndedSignIns(db, SESSION_IDLE_SECONDS, THROTTLE.windowSeconds);
