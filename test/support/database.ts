import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { databaseUrl } from '../../scripts/database-url.js';
import { readTestEnvironment } from './env.js';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A private, migrated database cloned from the run's template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const env = readTestEnvironment();
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
