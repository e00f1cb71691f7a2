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

/**
 * Runs `work` while PostgreSQL refuses to store an idempotent answer containing `marker`: a
 * failure outside every row's savepoint (as text jsonb cannot hold would be), which fails
 * the transaction of the whole group the request runs in.
 */
export async function whileAnswersContaining(db: Db, marker: string, work: () => Promise<void>): Promise<void> {
  // A constraint, not a trigger, as above (Citus).
  await sql`ALTER TABLE idempotency_records ADD CONSTRAINT refuse_test_answers CHECK (strpos(response_body::text, ${sql.lit(marker)}) = 0) NOT VALID`.execute(db);
  try {
    await work();
  } finally {
    await sql`ALTER TABLE idempotency_records DROP CONSTRAINT refuse_test_answers`.execute(db);
  }
}
