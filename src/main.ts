import { once } from 'node:events';
import type { Server } from 'node:http';
import { ConfigError, loadConfig } from './config.js';
import { createContext } from './context.js';
import { createDb, createPool } from './db/connect.js';
import { startEmbeddedDatabase } from './db/embedded.js';
import { migrateToLatest } from './db/migrate.js';
import { createApp } from './http/app.js';
import { createLogger } from './logger.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const embedded = config.DATABASE_URL ? null : await startEmbeddedDatabase({
    dir: config.EMBEDDED_PG_DIR,
    port: config.EMBEDDED_PG_PORT,
    log: (message) => logger.warn({ embeddedPostgres: message }),
  });
  if (embedded) logger.info({ dir: config.EMBEDDED_PG_DIR, port: config.EMBEDDED_PG_PORT }, 'DATABASE_URL is not set: using the embedded PostgreSQL');

  const ctx = await createContext(config, { databaseUrl: config.DATABASE_URL ?? embedded!.url, logger });
  const applied = await migrateToLatest(ctx.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');

  const server: Server = createApp(ctx).listen(config.PORT, config.HOST);
  await once(server, 'listening');
  // The in-process worker gets its own small pool (asynchronous commit, see connect.ts).
  const workerDb = config.WORKER ? createDb(createPool(config.DATABASE_URL ?? embedded!.url, 4, { asynchronousCommit: true })) : null;
  // Loaded only when it runs: the HTTP client and HTML parser stay out of an API-only process.
  const worker = workerDb ? (await import('./outbound/worker.js')).startWorker({ config, db: workerDb, logger }) : null;
  const address = `http://${config.HOST}:${config.PORT}`;
  logger.info({ url: `${address}/api/v1`, docs: `${address}/docs`, worker: config.WORKER }, 'Lead Intake API listening');
  const { keys } = (await ctx.pool.query<{ keys: number }>('SELECT count(*)::int AS keys FROM api_keys')).rows[0]!;
  if (keys === 0) {
    logger.info('No API key exists yet. Create a demo workspace and key with: npm run --silent cli -- demo');
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await Promise.all([closed, worker?.stop()]);
    await workerDb?.destroy();
    await ctx.close();
    await embedded?.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  }
  process.exit(1);
});
