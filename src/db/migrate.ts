import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './connect.js';
import * as initial from './migrations/0001_initial.js';
import * as outbound from './migrations/0002_outbound.js';

// Migrations are listed here rather than read from a folder, so the same code runs
// compiled, under tsx and under jest without path juggling.
const migrations: Record<string, Migration> = {
  '0001_initial': initial,
  '0002_outbound': outbound,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName);
}
