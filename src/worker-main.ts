import type { Server } from 'node:http';
import { loadConfig } from './config.js';
import { ProcessDatabase } from './db/open.js';
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
  const running: { database?: ProcessDatabase; worker?: RunningWorker; metricsServer?: Server } = {};
  const stop = async () => {
    await running.worker?.stop();
    await closeMetricsServer(running.metricsServer);
    await running.database?.close();
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
    const database = running.database = await ProcessDatabase.open(config, logger);
    await database.migrate();
    // The worker needs only the database: no Redis, no API key cache.
    const db = database.pool('worker', config.DATABASE_POOL_SIZE, { metrics, asynchronousCommit: true });
    running.worker = startWorker({ config, db, logger, metrics });
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
