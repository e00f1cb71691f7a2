import { sql } from 'kysely';
import type { Db, Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';

// Every statement of the console's sign-in: links, sessions, failures and password hashes.

/** A new link replaces the user's earlier unused ones: only the newest can sign them in. */
export async function insertSignInLink(db: Executor, link: { token_hash: Buffer; workspace_id: number; user_id: number; expires_at: Date; minted_by: number | null }) {
  return inTransaction(db, async (trx) => {
    await trx.deleteFrom('console_sign_in_links').where('user_id', '=', link.user_id).where('used_at', 'is', null).execute();
    return trx.insertInto('console_sign_in_links').values(link).returning('expires_at').executeTakeFirstOrThrow();
  });
}

/** Uses the link up in the statement that finds it: of two concurrent redemptions one gets the row. */
export function redeemSignInLink(db: Executor, tokenHash: Buffer) {
  return db
    .updateTable('console_sign_in_links')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<string>`now()`)
    .returning(['workspace_id', 'user_id'])
    .executeTakeFirst();
}

export function insertSession(db: Executor, session: { token_hash: Buffer; workspace_id: number; user_id: number; expires_at: Date }) {
  return db.insertInto('console_sessions').values(session).execute();
}

/** The session's user as pages need it; none when the session is missing, idle too long or past its end. */
export function findLiveSession(db: Executor, tokenHash: Buffer, idleSeconds: number) {
  return db
    .selectFrom('console_sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .innerJoin('workspaces as w', 'w.id', 's.workspace_id')
    .where('s.token_hash', '=', tokenHash)
    .where('s.expires_at', '>', sql<string>`now()`)
    .where('s.last_seen_at', '>', sql<string>`now() - make_interval(secs => ${idleSeconds})`)
    .select([
      's.workspace_id',
      's.user_id',
      'u.email',
      'u.role',
      'w.name as workspace_name',
      sql<number>`extract(epoch FROM now() - s.last_seen_at)::float8`.as('idle_seconds'),
      sql<number>`extract(epoch FROM now() - s.created_at)::float8`.as('age_seconds'),
    ])
    .executeTakeFirst();
}

export function touchSession(db: Executor, tokenHash: Buffer) {
  return db
    .updateTable('console_sessions')
    .set({ last_seen_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .execute();
}

export function deleteSession(db: Executor, tokenHash: Buffer) {
  return db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).execute();
}

/** Ends every session of the user (a password change, a role change, "Sign out everywhere"). */
export function deleteSessionsOfUser(db: Executor, userId: number) {
  return db.deleteFrom('console_sessions').where('user_id', '=', userId).execute();
}

/** The user's live sessions, newest first, for "Sessions" under Your password. */
export function listLiveSessions(db: Executor, userId: number, idleSeconds: number) {
  return db
    .selectFrom('console_sessions')
    .where('user_id', '=', userId)
    .where('expires_at', '>', sql<string>`now()`)
    .where('last_seen_at', '>', sql<string>`now() - make_interval(secs => ${idleSeconds})`)
    .select(['token_hash', 'created_at', 'last_seen_at', 'expires_at'])
    .orderBy('created_at', 'desc')
    .execute();
}

/** Sessions and links of a user that can no longer be used, deleted when the user signs in. */
export async function deleteDeadSignIns(db: Executor, userId: number, idleSeconds: number) {
  await db
    .deleteFrom('console_sessions')
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('expires_at', '<=', sql<string>`now()`), eb('last_seen_at', '<=', sql<string>`now() - make_interval(secs => ${idleSeconds})`)]))
    .execute();
  await db
    .deleteFrom('console_sign_in_links')
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('used_at', 'is not', null), eb('expires_at', '<=', sql<string>`now()`)]))
    .execute();
}

/** Users who may sign in with this email and a password (an email may be a user of several workspaces). */
export function findPasswordUsers(db: Executor, email: string, limit: number) {
  return db
    .selectFrom('users')
    .where('email', '=', email)
    .where('password_hash', 'is not', null)
    .select(['id', 'workspace_id', 'password_hash'])
    .orderBy('id')
    .limit(limit)
    .execute();
}

export function findPasswordHash(db: Executor, userId: number) {
  return db.selectFrom('users').where('id', '=', userId).select('password_hash').executeTakeFirst();
}

export function setPasswordHash(db: Executor, userId: number, passwordHash: string) {
  return db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).returning(['id', 'workspace_id', 'email']).executeTakeFirst();
}

/**
 * Reserves one attempt for every subject, or none when one of them already has its limit of
 * attempts within the window. Counting and writing are one step: each subject's advisory lock
 * (taken in a fixed order) queues concurrent attempts, so N guesses in parallel get at most the
 * limit's reservations. A reservation counts as a failure until `releaseSignInAttempts` drops it.
 */
export async function reserveSignInAttempt(db: Db, subjects: ReadonlyArray<{ key: string; refuseAfter: number }>, windowSeconds: number) {
  const ordered = [...subjects].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return db.transaction().execute(async (trx) => {
    for (const subject of ordered) await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`console-sign-in:${subject.key}`}, 0))`.execute(trx);
    const rows = await trx
      .selectFrom('console_sign_in_failures')
      .where(
        'subject',
        'in',
        ordered.map((subject) => subject.key),
      )
      .where('created_at', '>', sql<string>`now() - make_interval(secs => ${windowSeconds})`)
      .groupBy('subject')
      .select(['subject', sql<number>`count(*)::int`.as('failures')])
      .execute();
    const earlier = new Map(rows.map((row) => [row.subject, row.failures]));
    if (ordered.some((subject) => (earlier.get(subject.key) ?? 0) >= subject.refuseAfter)) return null;
    const inserted = await trx
      .insertInto('console_sign_in_failures')
      .values(ordered.map((subject) => ({ subject: subject.key })))
      .returning('id')
      .execute();
    return { ids: inserted.map((row) => row.id), earlier };
  });
}

/** Drops a reservation whose attempt was no failure (the right password, or no check was made). */
export async function releaseSignInAttempts(db: Executor, ids: readonly number[]): Promise<void> {
  if (ids.length > 0) await db.deleteFrom('console_sign_in_failures').where('id', 'in', ids).execute();
}

/** A sign-in link lifts the lock wrong passwords put on an email: its owner is back at once. */
export function clearSignInFailures(db: Executor, subject: string) {
  return db.deleteFrom('console_sign_in_failures').where('subject', '=', subject).execute();
}

/** Failures older than the window are of no further use. */
export function purgeSignInFailures(db: Executor, subjects: readonly string[], windowSeconds: number) {
  return db
    .deleteFrom('console_sign_in_failures')
    .where('subject', 'in', subjects)
    .where('created_at', '<=', sql<string>`now() - make_interval(secs => ${windowSeconds})`)
    .execute();
}

/** Ended sessions, used or expired links and failures past the window, whoever they belong to (the worker's housekeeping). */
export async function purgeEndedSignIns(db: Executor, idleSeconds: number, failureWindowSeconds: number): Promise<void> {
  await db
    .deleteFrom('console_sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', sql<string>`now()`), eb('last_seen_at', '<=', sql<string>`now() - make_interval(secs => ${idleSeconds})`)]))
    .execute();
  await db
    .deleteFrom('console_sign_in_links')
    .where((eb) => eb.or([eb('used_at', 'is not', null), eb('expires_at', '<=', sql<string>`now()`)]))
    .execute();
  await db
    .deleteFrom('console_sign_in_failures')
    .where('created_at', '<=', sql<string>`now() - make_interval(secs => ${failureWindowSeconds})`)
    .execute();
}
