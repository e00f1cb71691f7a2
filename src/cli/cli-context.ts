import type { Logger } from 'pino';
import { loadConfig, type Config } from '../config.js';
import type { Db } from '../db/connect.js';
import { ProcessDatabase } from '../db/open.js';
import { IMPORT_CHUNKS_AT_ONCE } from '../lead-imports/service.js';
import { useSecretsKey } from '../secrets/keyring.js';
import { createLogger } from '../logger.js';

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
  useSecretsKey(config, logger, 'info');
  const database = await ProcessDatabase.open(config, logger);
  try {
    await database.migrate();
    // `lead import` runs its chunks side by side, each holding a connection through its
    // transaction, and records each chunk's rows on one more: fewer would leave a chunk
    // waiting for a connection past the pool's timeout.
    return await work({ config, db: database.pool('cli', IMPORT_CHUNKS_AT_ONCE + 1), logger });
  } finally {
    await database.close();
  }
}

/** Runs one command in a CLI context and prints its result as the one JSON value on stdout. */
export async function runCommand(action: (ctx: CliContext) => Promise<unknown>): Promise<void> {
  const result = await withCliContext(action);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
