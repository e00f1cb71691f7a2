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
  const name = `lead_intake_test_${env.runId}_${randomBytes(6).toString("hex")}`;
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

// This jest worker's Citus databases that no test holds (each made and migrated once per run).
const idle: string[] = [];
let made = 0;

async function takeCitusDatabase(): Promise<TestDatabase> {
  const env = readTestEnvironment();
  let url = idle.pop();
  if (url === undefined) {
    url = await createCitusDatabase(env.adminUrl, `lead_intake_test_${env.runId}_w${process.env.JEST_WORKER_ID ?? '0'}_${made++}`);
    const db = createDb(createPool(url, 1, { logger: pino({ level: 'warn' }), name: 'test-citus' }));
    await migrateToLatest(db).finally(() => db.destroy());
  }
  const taken = url;
  return {
    url: taken,
    async drop() {
      // The test's connections are closed by now; what a killed child left is ended here.
      const client = new pg.Client({ connectionString: env.adminUrl });
      await client.connect();
      try {
        await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [new URL(taken).pathname.slice(1)]);
      } finally {
        await client.end();
      }
      await emptyDatabase(taken);
      idle.push(taken);
    },
  };
}
