import { sql } from 'kysely';
import type { Db } from '../../src/db/connect.js';

/**
 * Runs `work` while PostgreSQL refuses to insert a lead of this name: a failure no rule of the
 * service expects (as a full disk or a broken constraint would be), for tests of what an
 * unexpected failure of one row or request leaves.
 */
export async function whileLeadsNamed(db: Db, name: string, work: () => Promise<void>): Promise<void> {
  // A constraint, not a trigger: Citus refuses triggers on distributed tables and propagates constraints.
  await sql`ALTER TABLE leads ADD CONSTRAINT refuse_test_leads CHECK (name <> ${sql.lit(name)}) NOT VALID`.execute(db);
  try {
    await work();
  } finally {
    await sql`ALTER TABLE leads DROP CONSTRAINT refuse_test_leads`.execute(db);
  }
}
