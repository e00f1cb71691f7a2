import { ConfigError, loadConfig } from './config.js';
import { createDb, createPool } from './db/connect.js';
import { startEmbeddedDatabase } from './db/embedded.js';
import { migrateToLatest } from './db/migrate.js';
import { createLogger } from './logger.js';
import { startWorker } from './outbound/worker.js';

// `npm run worker`: the outbox dispatcher and website analysis without the HTTP API.
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const embedded = config.DATABASE_URL ? null : await startEmbeddedDatabase({ dir: config.EMBEDDED_PG_DIR, port: config.EMBEDDED_PG_PORT });
  // The worker needs only the database: no Redis, no API key cache.
  const db = createDb(createPool(config.DATABASE_URL ?? embedded!.url, config.DATABASE_POOL_SIZE, { asynchronousCommit: true }));
  await migrateToLatest(db);
  const worker = startWorker({ config, db, logger });
  logger.info('worker started');
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await worker.stop();
    await db.destroy();
    await embedded?.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
}

main().catch((error: unknown) => {
  process.stderr.write(error instanceof ConfigError ? `${error.message}\n` : `Worker failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
