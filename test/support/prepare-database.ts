import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb, createPool } from '../../src/db/connect.js';
import { startEmbeddedDatabase } from '../../src/db/embedded.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { databaseUrl, writeTestEnvironment } from './env.js';

// Migrates one template database per run; every test file clones it (CREATE DATABASE ...
// TEMPLATE), which takes milliseconds and gives each file a private, fully migrated database.
// With DATABASE_URL unset the embedded PostgreSQL under .data/test-postgres is used.
export default async function prepareDatabase(): Promise<void> {
  // The CLI tests run the compiled CLI, as `npm run cli` does.
  execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { stdio: 'inherit' });
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const embedded = await startEmbeddedDatabase({ dir: '.data/test-postgres', port: 54331 });
    (globalThis as { __embeddedTestDb?: typeof embedded }).__embeddedTestDb = embedded;
    adminUrl = embedded.url;
    process.stderr.write('\nDATABASE_URL is not set: tests run on the embedded PostgreSQL.\n');
  }
  if (!process.env.REDIS_URL) {
    process.stderr.write('REDIS_URL is not set: SKIPPING the Redis rate-limit store tests (the in-process store is tested).\n');
  }
  const runId = randomBytes(4).toString('hex');
  const templateDatabase = `lead_intake_test_${runId}_template`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${templateDatabase}"`);
  } finally {
    await admin.end();
  }
  const db = createDb(createPool(databaseUrl(adminUrl, templateDatabase), 1));
  await migrateToLatest(db);
  await db.destroy();
  writeTestEnvironment({ adminUrl, runId, templateDatabase, redisUrl: process.env.REDIS_URL ?? null });
}
