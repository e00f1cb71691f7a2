import type { Transaction } from 'kysely';
import type { Executor } from './connect.js';
import type { Database } from './schema.js';

/** Runs `work` in the caller's transaction when `db` is one, else in a new one. */
export function inTransaction<T>(db: Executor, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work);
}
