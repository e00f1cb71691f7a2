import type { Server } from 'node:http';
import { loadConfig } from './config.js';
import { ProcessDatabase } from './db/open.js';
import { describeStartupFailure, installLastResort } from './lifecycle.js';
import { useSecretsKey } from './secrets/keyring.js';
import { createLogger } from './logger.js';
import { closeMetricsServer, serveMetrics } from './metrics/server.js';
import { WorkerContext } from './worker/context.js';

// `npm run worker`: the outbox dispatcher and website analysis without the HTTP API.
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const running: { database?: ProcessDatabase; worker?: WorkerContext; metricsServer?: Server } = {};
  const stop = async () => {
    await running.worker?.destroy();
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
    running.worker = WorkerContext.fromConfig(config, { database, logger });
    running.worker.start();
    if (config.METRICS_PORT !== undefined) running.metricsServer = await serveMetrics(running.worker.metrics.registry, { port: config.METRICS_PORT, host: config.HOST, logger });
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
