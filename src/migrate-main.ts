import { loadConfig } from './config.js';
import { describeStartupFailure } from './lifecycle.js';
import { useSecretsKey } from './secrets/keyring.js';
import { createLogger } from './logger.js';
import { createDb, createPool } from './db/connect.js';
import { startEmbeddedDatabase } from './db/embedded/start.js';
import { migrateToLatest } from './db/migrate.js';

// `npm run migrate`: prints { applied } on stdout; logs go to stderr.
try {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL, 2);
  useSecretsKey(config, logger);
  const embedded = config.DATABASE_URL ? null : await startEmbeddedDatabase({ dir: config.EMBEDDED_PG_DIR, port: config.EMBEDDED_PG_PORT, logger });
  const db = createDb(createPool(config.DATABASE_URL ?? embedded!.url, 1, { logger, name: 'migrate' }));
  try {
    const applied = await migrateToLatest(db);
    process.stdout.write(`${JSON.stringify({ applied })}\n`);
  } finally {
    await db.destroy();
    await embedded?.close();
  }
} catch (error) {
  process.stderr.write(`${describeStartupFailure(error)}\n`);
  process.exitCode = 1;
}
