import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from '@jest/globals';
import pg from 'pg';
import { pino } from 'pino';
import { databaseUrl } from '../../scripts/database-url.js';
import { createDb, createPool, type Db } from '../../src/db/connect.js';
import { createMigrator } from '../../src/db/migrate.js';
import { readTestEnvironment } from './env.js';

async function admin(query: string): Promise<void> {
  const client = new pg.Client({ connectionString: readTestEnvironment().adminUrl });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

/**
 * A database of its own for a migration test, created empty before the file's tests and
 * migrated up to `migratedTo` (none: left empty), dropped after them. A migration test needs
 * the schema as it was, so it cannot use the migrated template the other tests clone.
 */
export function migrationTestDatabase(label: string, migratedTo?: string): { db: () => Db } {
  const name = `lead_intake_test_${readTestEnvironment().runId}_${label}_${randomBytes(4).toString('hex')}`;
  let db: Db | undefined;
  beforeAll(async () => {
    await admin(`CREATE DATABASE "${name}"`);
    db = createDb(createPool(databaseUrl(readTestEnvironment().adminUrl, name), 1, { logger: pino({ level: 'silent' }), name: `${label}-test` }));
    if (migratedTo === undefined) return;
    const { error } = await createMigrator(db).migrateTo(migratedTo);
    if (error) throw error;
  });
  afterAll(async () => {
    await db?.destroy();
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  });
  return { db: () => db! };
}
