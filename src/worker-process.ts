import type { Server } from 'node:http';
import { loadConfig } from './config.js';
import { ProcessDatabase } from './db/open.js';
import { describeStartupFailure, runProcess } from './lifecycle.js';
import { useSecretsKey } from './secrets/keyring.js';
import { createLogger } from './logger.js';
import { closeMetricsServer, serveMetrics } from './metrics/server.js';
import { flushTraces } from './tracing/switch.js';
import { WorkerContext } from './worker/context.js';

// `npm run worker` (through src/worker-main.ts, which starts tracing first): the outbox
// dispatcher and website analysis without the HTTP API.
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const running: { database?: ProcessDatabase; worker?: WorkerContext; metricsServer?: Server } = {};
  useSecretsKey(config, logger);
  await runProcess(logger, {
    stopping: 'worker shutting down: finishing in-flight deliveries and analyses',
    async start() {
      const database = (running.database = await ProcessDatabase.open(config, logger));
      await database.migrate();
      // The worker needs only the database: no Redis, no API key cache.
      running.worker = WorkerContext.fromConfig(config, { database, logger });
      running.worker.start();
      if (config.METRICS_PORT !== undefined) running.metricsServer = await serveMetrics(running.worker.metrics.registry, { port: config.METRICS_PORT, host: config.HOST, logger });
      logger.info('worker started');
    },
    async stop() {
      await running.worker?.close();
      await closeMetricsServer(running.metricsServer);
      await running.database?.close();
      await flushTraces();
    },
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${describeStartupFailure(error)}\n`);
  process.exit(1);
});
