import { beforeAll, describe, expect, it } from '@jest/globals';
import { Migrator, type Migration } from 'kysely';
import type { Db } from '../../src/db/connect.js';
import { createMigrator, migrateToLatest } from '../../src/db/migrate.js';
import { migrationTestDatabase } from '../support/migration-database.js';

// 0005_secrets_at_rest was merged after 0006_delivery_tools: a database that ran 0006 first
// must still take 0005, not refuse every later migration.

const database = migrationTestDatabase('order');
let db: Db;
beforeAll(() => {
  db = database.db();
});

describe('migrations merged out of order', () => {
  it('runs a migration that sorts before one the database already ran', async () => {
    const all = await createMigrator(db).getMigrations();
    // The database as it was when 0005 merged: up to 0006, without 0005 (later ones, 0021 among them, build on 0005's columns).
    const ranBefore = all.filter((info) => info.name !== '0005_secrets_at_rest' && info.name <= '0006_delivery_tools');
    const withoutSecrets: Record<string, Migration> = Object.fromEntries(ranBefore.map((info) => [info.name, info.migration]));
    const before = await new Migrator({ db, provider: { getMigrations: async () => withoutSecrets } }).migrateToLatest();
    expect(before.error).toBeUndefined();
    expect(before.results?.map((result) => result.migrationName)).toContain('0006_delivery_tools');

    expect(await migrateToLatest(db)).toEqual(all.filter((info) => info.name === '0005_secrets_at_rest' || info.name > '0006_delivery_tools').map((info) => info.name));
    expect((await createMigrator(db).getMigrations()).filter((info) => info.executedAt === undefined)).toEqual([]);
  });
});
