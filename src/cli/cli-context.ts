import { loadConfig } from '../config.js';
import { createDb, createPool, type Db } from '../db/connect.js';
import { startEmbeddedDatabase } from '../db/embedded.js';
import { migrateToLatest } from '../db/migrate.js';
import { createLogger } from '../logger.js';
import type { Config } from '../config.js';
import type { Logger } from 'pino';

export interface CliContext {
  config: Config;
  db: Db;
  logger: Logger;
}

// The CLI reads the same environment as the server. Without DATABASE_URL it joins the
// embedded database the server started, or starts it for the length of the command.
export async function withCliContext<T>(work: (ctx: CliContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // Logs go to stderr: stdout carries exactly one JSON value.
  const logger = createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL, 2);
  const embedded = config.DATABASE_URL ? null : await startEmbeddedDatabase({ dir: config.EMBEDDED_PG_DIR, port: config.EMBEDDED_PG_PORT });
  const db = createDb(createPool(config.DATABASE_URL ?? embedded!.url, 2));
  try {
    await migrateToLatest(db);
    return await work({ config, db, logger });
  } finally {
    await db.destroy();
    await embedded?.stop();
  }
}
