import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';

export function findKeyForAuthentication(db: Executor, prefix: string) {
  return (
    db
      .selectFrom('api_keys as k')
      .innerJoin('workspaces as w', 'w.id', 'k.workspace_id')
      // The creator's current role: a key works only while its creator may still create keys.
      .leftJoin('users as u', 'u.id', 'k.user_id')
      .where('k.prefix', '=', prefix)
      .select([
        'k.id',
        'k.workspace_id',
        'k.user_id',
        'k.name',
        'k.prefix',
        'k.token_hash',
        'k.scopes',
        'k.expires_at',
        'k.revoked_at',
        'k.last_used_at',
        'w.name as workspace_name',
        'w.has_suppression_list',
        'u.role as creator_role',
      ])
      .executeTakeFirst()
  );
}

/** A key as authentication reads it (cached per process by the key cache). */
export type KeyForAuthentication = NonNullable<Awaited<ReturnType<typeof findKeyForAuthentication>>>;

// Conditional, so concurrent processes write at most once per interval per key.
export function touchLastUsed(db: Executor, keyId: number, intervalSeconds: number) {
  return db
    .updateTable('api_keys')
    .set({ last_used_at: sql`now()` })
    .where('id', '=', keyId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<string>`now() - make_interval(secs => ${intervalSeconds})`)]))
    .returning('last_used_at')
    .executeTakeFirst();
}

/**
 * Tells every API process that these keys changed (their caches and prefix views listen). The
 * statements that change keys call it themselves: on Citus api_keys is a reference table, which
 * may have no trigger, and a notification sent on a worker node never reaches the coordinator's
 * listeners. On plain PostgreSQL the table's trigger (migration 0004) notifies as well, which
 * also covers keys changed outside the service; a second notification only refreshes a cache.
 */
/** The prefixes of a workspace's keys, for notifying that what authentication reads of it changed. */
export async function keyPrefixesOfWorkspace(db: Executor, workspaceId: number): Promise<string[]> {
  return (await db.selectFrom('api_keys').where('workspace_id', '=', workspaceId).select('prefix').execute()).map((row) => row.prefix);
}

export async function notifyKeysChanged(db: Executor, prefixes: readonly string[]): Promise<void> {
  if (prefixes.length === 0) return;
  await sql`SELECT pg_notify('api_key_changed', p) FROM unnest(${[...prefixes]}::text[]) AS p`.execute(db);
}

export async function insertKey(
  db: Executor,
  key: {
    workspace_id: number;
    user_id: number;
    name: string;
    prefix: string;
    token_hash: Buffer;
    scopes: string[];
    expires_at: string | null;
  },
) {
  const inserted = await db.insertInto('api_keys').values(key).returning(['id', 'name', 'prefix', 'scopes', 'expires_at']).executeTakeFirstOrThrow();
  await notifyKeysChanged(db, [inserted.prefix]);
  return inserted;
}

// least(), not coalesce(): Citus refuses now() inside COALESCE or CASE in a modification.
export async function revokeKey(db: Executor, keyId: number, workspaceId: number) {
  const revoked = await db
    .updateTable('api_keys')
    .set({ revoked_at: sql`least(revoked_at, now())` })
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', keyId)
    .returning(['id', 'prefix', 'workspace_id'])
    .executeTakeFirst();
  if (revoked) await notifyKeysChanged(db, [revoked.prefix]);
  return revoked;
}

/** The prefixes of a user's keys (their creator's deletion orphans them: see deleteUser). */
export async function prefixesOfUser(db: Executor, userId: number): Promise<string[]> {
  return (await db.selectFrom('api_keys').where('user_id', '=', userId).select('prefix').execute()).map((row) => row.prefix);
}

export function listKeys(db: Executor, workspaceId: number) {
  return db
    .selectFrom('api_keys')
    .where('workspace_id', '=', workspaceId)
    .select(['id', 'name', 'prefix', 'scopes', 'user_id', 'expires_at', 'revoked_at', 'last_used_at', 'created_at'])
    .orderBy('id')
    .execute();
}

/**
 * Whether creating a key NOTIFYs api_key_changed (migration 0003). Until it does, a view of
 * the existing prefixes cannot hear of new keys; false too while api_keys does not exist yet.
 * Bit 4 of tgtype is TRIGGER_TYPE_INSERT; tgenabled 'D' is a disabled trigger.
 */
export async function keyCreationIsNotified(db: Executor): Promise<boolean> {
  // On Citus (src/db/distribution.ts) the trigger is gone and insertKey notifies.
  const { rows } = await sql<{ notified: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM pg_trigger
      WHERE tgrelid = to_regclass('api_keys') AND tgname = 'api_keys_changed' AND tgtype & 4 <> 0 AND tgenabled <> 'D'
    ) OR (to_regclass('api_keys') IS NOT NULL AND EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')) AS notified
  `.execute(db);
  return rows[0]!.notified;
}

export async function countKeys(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('keys'))
    .executeTakeFirstOrThrow();
  return Number(row.keys);
}

/** One page of prefixes in id order (the primary key walks them without sorting). */
export function listPrefixesAfter(db: Executor, afterId: number, limit: number) {
  return db.selectFrom('api_keys').where('id', '>', afterId).orderBy('id').limit(limit).select(['id', 'prefix']).execute();
}
