import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pino } from 'pino';
import { createDb, createPool } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { databaseUrl } from '../../scripts/database-url.js';
import { isCitusCoordinator } from './citus-databases.js';
import { writeTestEnvironment } from './env.js';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';

// Migrates one template database per run; every test file clones it (CREATE DATABASE ...
// TEMPLATE), which takes milliseconds and gives each file a private, fully migrated database.
// With DATABASE_URL unset the run starts its own embedded PostgreSQL (a temporary data
// directory and a free port, removed at teardown), so two runs at once never collide.
export default async function prepareDatabase(): Promise<void> {
  // The CLI tests run the compiled CLI, as `npm run cli` does.
  execFileSync(process.execPath, ['scripts/build-if-needed.mjs'], { stdio: 'inherit' });
  const runId = randomBytes(4).toString('hex');
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const embedded = await startPrivatePostgres(`test-${runId}`);
    (globalThis as { __embeddedTestDb?: PrivatePostgres }).__embeddedTestDb = embedded;
    adminUrl = embedded.url;
    process.stderr.write(`\nDATABASE_URL is not set: tests run on their own embedded PostgreSQL (port ${embedded.port}).\n`);
  }
  if (!process.env.REDIS_URL) {
    process.stderr.write('REDIS_URL is not set: SKIPPING the Redis rate-limit store tests (the in-process store is tested).\n');
  }
  const templateDatabase = `lead_intake_test_${runId}_template`;
  if (await isCitusCoordinator(adminUrl)) {
    process.stderr.write(`\nDATABASE_URL is a Citus coordinator: each jest worker migrates a database of its own on every node and empties it between files.\n`);
    writeTestEnvironment({ adminUrl, runId, templateDatabase, citus: true, redisUrl: process.env.REDIS_URL ?? null });
    return;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  admin.on('error', () => {});
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${templateDatabase}"`);
  } finally {
    await admin.end();
  }
  const db = createDb(createPool(databaseUrl(adminUrl, templateDatabase), 1, { logger: pino({ level: 'warn' }), name: 'test-template' }));
  await migrateToLatest(db);
  await db.destroy();
  writeTestEnvironment({ adminUrl, runId, templateDatabase, citus: false, redisUrl: process.env.REDIS_URL ?? null });
}
