import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { loadConfig, type Config } from './config.js';
import { createContext, type AppContext } from './context.js';
import { createDb, createPool, type Db } from './db/connect.js';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './db/embedded/start.js';
import { migrateToLatest } from './db/migrate.js';
import { createApp } from './http/app.js';
import { describeStartupFailure, installLastResort } from './lifecycle.js';
import { useSecretsKey } from './secrets/keyring.js';
import { createLogger } from './logger.js';
import { closeMetricsServer, serveMetrics } from './metrics/server.js';
import type { RunningWorker } from './worker/loops.js';

/** What this process runs, filled in start order so a failed start closes what it opened. */
interface Running {
  embedded?: EmbeddedDatabase | null;
  ctx?: AppContext;
  server?: Server;
  metricsServer?: Server;
  workerDb?: Db;
  worker?: RunningWorker | null;
}

async function start(config: Config, logger: Logger, running: Running): Promise<void> {
  running.embedded = config.DATABASE_URL ? null : await startEmbeddedDatabase({ dir: config.EMBEDDED_PG_DIR, port: config.EMBEDDED_PG_PORT, logger });
  const databaseUrl = config.DATABASE_URL ?? running.embedded!.url;
  running.ctx = await createContext(config, { databaseUrl, logger });
  // Its own connection: a migration may run longer than the API pool's statement timeout.
  const migrationDb = createDb(createPool(databaseUrl, 1, { logger, name: 'migrate' }));
  const applied = await migrateToLatest(migrationDb).finally(() => migrationDb.destroy());
  if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');

  running.server = createApp(running.ctx).listen(config.PORT, config.HOST);
  await once(running.server, 'listening');
  const { metrics } = running.ctx;
  if (config.WORKER) {
    // The in-process worker gets its own small pool (asynchronous commit, see connect.ts).
    const workerPool = createPool(databaseUrl, 4, { logger, name: 'worker', asynchronousCommit: true });
    metrics.watchPool('worker', workerPool);
    running.workerDb = createDb(workerPool);
    // Loaded only when it runs: the HTTP client and HTML parser stay out of an API-only process.
    running.worker = (await import('./worker/loops.js')).startWorker({ config, db: running.workerDb, logger, metrics });
  }
  // One endpoint with everything this process does: the API's requests and, with the worker, its deliveries.
  if (config.METRICS_PORT !== undefined) running.metricsServer = await serveMetrics(metrics.registry, { port: config.METRICS_PORT, host: config.HOST, logger });
  const address = `http://${config.HOST}:${(running.server.address() as AddressInfo).port}`;
  logger.info({ url: `${address}/api/v1`, docs: `${address}/docs`, worker: config.WORKER }, 'Lead Intake API listening');
  const { keys } = (await running.ctx.pool.query<{ keys: number }>('SELECT count(*)::int AS keys FROM api_keys')).rows[0]!;
  if (keys === 0) {
    logger.info('No API key exists yet. Create a demo workspace and key with: npm run --silent cli -- demo');
  }
}

/** Stops accepting connections, finishes in-flight requests and deliveries, then closes the pools and the embedded database. */
async function stop(running: Running): Promise<void> {
  const { server } = running;
  const closed = server?.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : undefined;
  server?.closeIdleConnections();
  await Promise.all([closed, running.worker?.stop()]);
  await closeMetricsServer(running.metricsServer);
  await running.workerDb?.destroy();
  await running.ctx?.close();
  await running.embedded?.close();
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const running: Running = {};
  let stopping = false;
  const shutdown = async (reason: string, exitCode: number) => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, 'shutting down: no new connections, finishing in-flight requests and deliveries');
    await stop(running);
    logger.info('stopped');
    process.exit(exitCode);
  };
  installLastResort(logger, shutdown);
  useSecretsKey(config, logger);
  try {
    await start(config, logger, running);
  } catch (error) {
    await stop(running).catch(() => {});
    throw error;
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  process.on('SIGINT', () => void shutdown('SIGINT', 0));
}

main().catch((error: unknown) => {
  process.stderr.write(`${describeStartupFailure(error)}\n`);
  process.exit(1);
});
