import type { Server } from 'node:http';
import { loadConfig } from './config.js';
import { createDb, createPool, type Db } from './db/connect.js';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './db/embedded/start.js';
import { migrateToLatest } from './db/migrate.js';
import { describeStartupFailure, installLastResort } from './lifecycle.js';
import { useSecretsKey } from './secrets/keyring.js';
import { createLogger } from './logger.js';
import { createMetrics } from './metrics/metrics.js';
import { closeMetricsServer, serveMetrics } from './metrics/server.js';
import { startWorker, type RunningWorker } from './worker/loops.js';

// `npm run worker`: the outbox dispatcher and website analysis without the HTTP API.
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const metrics = createMetrics({ processMetrics: config.METRICS_PORT !== undefined });
  const running: { embedded?: EmbeddedDatabase | null; db?: Db; worker?: RunningWorker; metricsServer?: Server } = {};
  const stop = async () => {
    await running.worker?.stop();
    await closeMetricsServer(running.metricsServer);
    await running.db?.destroy();
    await running.embedded?.close();
  };
  let stopping = false;
  const shutdown = async (reason: string, exitCode: number) => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, 'worker shutting down: finishing in-flight deliveries and analyses');
    await stop();
    process.exit(exitCode);
  };
  installLastResort(logger, shutdown);
  useSecretsKey(config, logger);
  try {
    running.embedded = config.DATABASE_URL ? null : await startEmbeddedDatabase({ dir: config.EMBEDDED_PG_DIR, port: config.EMBEDDED_PG_PORT, logger });
    // The worker needs only the database: no Redis, no API key cache.
    const pool = createPool(config.DATABASE_URL ?? running.embedded!.url, config.DATABASE_POOL_SIZE, { logger, name: 'worker', asynchronousCommit: true });
    metrics.watchPool('worker', pool);
    running.db = createDb(pool);
    await migrateToLatest(running.db);
    running.worker = startWorker({ config, db: running.db, logger, metrics });
    if (config.METRICS_PORT !== undefined) running.metricsServer = await serveMetrics(metrics.registry, { port: config.METRICS_PORT, host: config.HOST, logger });
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
  logger.info('worker started');
  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  process.on('SIGINT', () => void shutdown('SIGINT', 0));
}

main().catch((error: unknown) => {
  process.stderr.write(`${describeStartupFailure(error)}\n`);
  process.exit(1);
});
