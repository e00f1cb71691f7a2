import { sql } from 'kysely';
import type { Db } from '../../src/db/connect.js';

/**
 * Runs `work` while PostgreSQL refuses to insert a lead of this name: a failure no rule of the
 * service expects (as a full disk or a broken constraint would be), for tests of what an
 * unexpected failure of one row or request leaves.
 */
export async function whileLeadsNamed(db: Db, name: string, work: () => Promise<void>): Promise<void> {
  await sql`
    CREATE FUNCTION refuse_test_leads() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.name = ${sql.lit(name)} THEN RAISE EXCEPTION 'refused by the test'; END IF;
      RETURN NEW;
    END $$`.execute(db);
  await sql`CREATE TRIGGER refuse_test_leads BEFORE INSERT ON leads FOR EACH ROW EXECUTE FUNCTION refuse_test_leads()`.execute(db);
  try {
    await work();
  } finally {
    await sql`DROP TRIGGER refuse_test_leads ON leads`.execute(db);
    await sql`DROP FUNCTION refuse_test_leads()`.execute(db);
  }
}

/**
 * Runs `work` while PostgreSQL refuses to store an idempotent answer containing `marker`: a
 * failure outside every row's savepoint (as text jsonb cannot hold would be), which fails
 * the transaction of the whole group the request runs in.
 */
export async function whileAnswersContaining(db: Db, marker: string, work: () => Promise<void>): Promise<void> {
  await sql`
    CREATE FUNCTION refuse_test_answers() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF strpos(NEW.response_body::text, ${sql.lit(marker)}) > 0 THEN RAISE EXCEPTION 'answer refused by the test'; END IF;
      RETURN NEW;
    END $$`.execute(db);
  await sql`CREATE TRIGGER refuse_test_answers BEFORE INSERT OR UPDATE ON idempotency_records FOR EACH ROW EXECUTE FUNCTION refuse_test_answers()`.execute(db);
  try {
    await work();
  } finally {
    await sql`DROP TRIGGER refuse_test_answers ON idempotency_records`.execute(db);
    await sql`DROP FUNCTION refuse_test_answers()`.execute(db);
  }
}
