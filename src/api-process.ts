import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { loadConfig, type Config } from './config.js';
import { createContext, type AppContext } from './context.js';
import { ProcessDatabase } from './db/open.js';
import { createApp } from './http/app.js';
import { describeStartupFailure, runProcess } from './lifecycle.js';
import { useSecretsKey } from './secrets/keyring.js';
import { createLogger } from './logger.js';
import { closeMetricsServer, serveMetrics } from './metrics/server.js';
import { flushTraces } from './tracing/switch.js';
import type { WorkerContext } from './worker/context.js';

// The API process (`npm start`, through src/main.ts, which starts tracing first).

/** What this process runs, filled in start order so a failed start closes what it opened. */
interface Running {
  database?: ProcessDatabase;
  ctx?: AppContext;
  server?: Server;
  metricsServer?: Server;
  worker?: WorkerContext | null;
}

async function start(config: Config, logger: Logger, running: Running): Promise<void> {
  const database = (running.database = await ProcessDatabase.open(config, logger));
  running.ctx = await createContext(config, { database, logger });
  const applied = await database.migrate();
  if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');

  running.server = createApp(running.ctx).listen(config.PORT, config.HOST);
  await once(running.server, 'listening');
  const { metrics } = running.ctx;
  if (config.WORKER) {
    // Loaded only when it runs: the HTTP client and HTML parser stay out of an API-only process.
    const { WorkerContext } = await import('./worker/context.js');
    // A small pool beside the API's, and the API's metrics: one endpoint reports both.
    running.worker = WorkerContext.fromConfig(config, { database, logger, metrics, poolSize: 4 });
    running.worker.start();
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
  await Promise.all([closed, running.worker?.close()]);
  await closeMetricsServer(running.metricsServer);
  await running.ctx?.close();
  await running.database?.close();
  await flushTraces();
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const running: Running = {};
  useSecretsKey(config, logger);
  await runProcess(logger, {
    stopping: 'shutting down: no new connections, finishing in-flight requests and deliveries',
    start: () => start(config, logger, running),
    stop: () => stop(running),
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${describeStartupFailure(error)}\n`);
  process.exit(1);
});
