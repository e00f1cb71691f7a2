import { sql, type Kysely } from 'kysely';

// Who minted a console sign-in link: the console user's id, or NULL for an operator with the
// CLI (`console link`). A plain column without a foreign key: console_sign_in_links is a
// reference table on Citus, and a minter deleted later leaves the number as it was.
//
// Touches only its own column of console_sign_in_links.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE console_sign_in_links ADD COLUMN minted_by bigint`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE console_sign_in_links DROP COLUMN minted_by`.execute(db);
}
