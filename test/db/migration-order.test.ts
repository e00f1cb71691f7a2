import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Migrator, type Migration } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { createDb, createPool, type Db } from '../../src/db/connect.js';
import { createMigrator, migrateToLatest } from '../../src/db/migrate.js';
import { databaseUrl } from '../../scripts/database-url.js';
import { readTestEnvironment } from '../support/env.js';

// 0005_secrets_at_rest was merged after 0006_delivery_tools: a database that ran 0006 first
// must still take 0005, not refuse every later migration.

let db: Db;
const name = `lead_intake_test_${readTestEnvironment().runId}_order_${randomBytes(4).toString('hex')}`;

async function admin(query: string) {
  const client = new pg.Client({ connectionString: readTestEnvironment().adminUrl });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin(`CREATE DATABASE "${name}"`);
  db = createDb(createPool(databaseUrl(readTestEnvironment().adminUrl, name), 1, { logger: pino({ level: 'silent' }), name: 'migration-order-test' }));
});
afterAll(async () => {
  await db.destroy();
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
});

describe('migrations merged out of order', () => {
  it('runs a migration that sorts before one the database already ran', async () => {
    const all = await createMigrator(db).getMigrations();
    const withoutSecrets: Record<string, Migration> = Object.fromEntries(
      all.filter((info) => info.name !== '0005_secrets_at_rest').map((info) => [info.name, info.migration]),
    );
    const before = await new Migrator({ db, provider: { getMigrations: async () => withoutSecrets } }).migrateToLatest();
    expect(before.error).toBeUndefined();
    expect(before.results?.map((result) => result.migrationName)).toContain('0006_delivery_tools');

    expect(await migrateToLatest(db)).toEqual(['0005_secrets_at_rest']);
    expect((await createMigrator(db).getMigrations()).filter((info) => info.executedAt === undefined)).toEqual([]);
  });
});
