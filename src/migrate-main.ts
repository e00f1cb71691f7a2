import { loadConfig } from './config.js';
import { describeStartupFailure } from './lifecycle.js';
import { useSecretsKey } from './secrets/keyring.js';
import { createLogger } from './logger.js';
import { ProcessDatabase } from './db/open.js';

// `npm run migrate`: prints { applied } on stdout; logs go to stderr.
try {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL, 2);
  useSecretsKey(config, logger);
  const database = await ProcessDatabase.open(config, logger);
  try {
    const applied = await database.migrate();
    process.stdout.write(`${JSON.stringify({ applied })}\n`);
  } finally {
    await database.close();
  }
} catch (error) {
  process.stderr.write(`${describeStartupFailure(error)}\n`);
  process.exitCode = 1;
}
