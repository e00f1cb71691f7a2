import type { Executor } from '../db/connect.js';

export function insertWorkspace(db: Executor, name: string) {
  return db.insertInto('workspaces').values({ name }).returning(['id', 'name']).executeTakeFirstOrThrow();
}

export function findWorkspace(db: Executor, id: number) {
  return db.selectFrom('workspaces').where('id', '=', id).select(['id', 'name']).executeTakeFirst();
}
