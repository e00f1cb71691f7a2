import pg from 'pg';
import { dropCitusDatabases } from './citus-databases.js';
import { readTestEnvironment } from './env.js';

export default async function cleanupDatabase(): Promise<void> {
  const env = readTestEnvironment();
  if (env.citus) {
    await dropCitusDatabases(env.adminUrl, `lead_intake_test_${env.runId}_`);
    return;
  }
  const admin = new pg.Client({ connectionString: env.adminUrl });
  await admin.connect();
  try {
    const databases = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`lead_intake_test_${env.runId}_%`]);
    for (const { datname } of databases.rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
  const embedded = (globalThis as { __embeddedTestDb?: { remove(): Promise<void> } }).__embeddedTestDb;
  await embedded?.remove();
}
