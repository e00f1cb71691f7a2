import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

/**
 * `GET /metrics` in Prometheus's text format on its own port (METRICS_PORT), apart from the
 * public API: the public port's routes stay exactly the OpenAPI document's, and the metrics
 * port can be left unpublished (only Prometheus reaches it).
 */
export async function serveMetrics(registry: Registry, options: { port: number; host: string; logger: Logger }): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found: the metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('Method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        options.logger.error({ err: error }, 'could not collect the metrics');
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Could not collect the metrics\n');
      },
    );
  });
  server.listen(options.port, options.host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  options.logger.info({ url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}/metrics` }, 'metrics listening');
  return server;
}

/** Stops the metrics listener (its scrapes are short; open keep-alive connections are closed). */
export async function closeMetricsServer(server: http.Server | undefined): Promise<void> {
  if (!server?.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}
