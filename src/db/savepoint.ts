import { sql } from 'kysely';
import type { Executor } from './connect.js';

/**
 * Runs `work` inside a savepoint: undone on error, and also undone on success when
 * `keep` is false (dry runs and preview rows).
 */
export async function inSavepoint<T>(db: Executor, name: string, keep: boolean, work: () => Promise<T>): Promise<T> {
  await sql`SAVEPOINT ${sql.id(name)}`.execute(db);
  try {
    const result = await work();
    await sql.raw(keep ? `RELEASE SAVEPOINT ${name}` : `ROLLBACK TO SAVEPOINT ${name}`).execute(db);
    return result;
  } catch (error) {
    await sql.raw(`ROLLBACK TO SAVEPOINT ${name}`).execute(db);
    throw error;
  }
}
