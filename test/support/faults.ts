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
