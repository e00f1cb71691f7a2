import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pino } from 'pino';
import { databaseUrl } from '../../scripts/database-url.js';
import { createDb, createPool } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createCitusDatabase, emptyDatabase } from './citus-databases.js';
import { readTestEnvironment } from './env.js';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A private, migrated database cloned from the run's template (on Citus: one of this jest worker's, emptied). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const env = readTestEnvironment();
  if (env.citus) return takeCitusDatabase();
  const name = `lead_intake_test_${env.runId}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: env.adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${env.templateDatabase}"`);
  } finally {
    await admin.end();
  }
  return {
    url: databaseUrl(env.adminUrl, name),
    async drop() {
      const client = new pg.Client({ connectionString: env.adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

// A jest worker's Citus databases are made and migrated once per run and reused by its later
// test files. Module state does not outlive a test file, so a database is taken by holding an
// advisory lock on the coordinator for as long as the file uses it, and emptied when taken.
async function takeCitusDatabase(): Promise<TestDatabase> {
  const env = readTestEnvironment();
  const holder = new pg.Client({ connectionString: env.adminUrl });
  holder.on('error', () => {});
  await holder.connect();
  for (let index = 0; ; index++) {
    const name = `lead_intake_test_${env.runId}_w${process.env.JEST_WORKER_ID ?? '0'}_${index}`;
    const taken = (await holder.query<{ taken: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS taken', [name])).rows[0]!.taken;
    if (!taken) continue;
    const exists = (await holder.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
    const url = exists ? databaseUrl(env.adminUrl, name) : await createCitusDatabase(env.adminUrl, name);
    if (exists) {
      await emptyDatabase(url);
    } else {
      const db = createDb(createPool(url, 1, { logger: pino({ level: 'warn' }), name: 'test-citus' }));
      await migrateToLatest(db).finally(() => db.destroy());
    }
    return {
      url,
      async drop() {
        // What a killed child process left connected is ended; the lock goes with the holder.
        await holder.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
        await holder.end();
      },
    };
  }
}
