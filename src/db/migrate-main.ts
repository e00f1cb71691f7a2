import { loadConfig } from '../config.js';
import { createDb, createPool } from './connect.js';
import { startEmbeddedDatabase } from './embedded.js';
import { migrateToLatest } from './migrate.js';

const config = loadConfig();
const embedded = config.DATABASE_URL ? null : await startEmbeddedDatabase({ dir: config.EMBEDDED_PG_DIR, port: config.EMBEDDED_PG_PORT });
const db = createDb(createPool(config.DATABASE_URL ?? embedded!.url, 1));
try {
  const applied = await migrateToLatest(db);
  process.stdout.write(`${JSON.stringify({ applied })}\n`);
} finally {
  await db.destroy();
  await embedded?.stop();
}
