import { createRequire } from 'node:module';
import type express from 'express';
import helmet from 'helmet';
import pTimeout from 'p-timeout';
import type { AppContext } from '../context.js';
import { writable } from '../db/connect.js';
import { docsPage } from './docs/docs-page.js';
import { documentForClients } from './docs/served-document.js';

const require = createRequire(import.meta.url);

/** A readiness probe answers within 2 s whatever hangs: a check still running after this counts as unreachable. */
const READINESS_CHECK_MS = 1500;
const withinReadinessBudget = <T>(check: Promise<T>): Promise<T> => pTimeout(check, { milliseconds: READINESS_CHECK_MS, message: 'readiness check timed out' });

/** Routes outside the public API: health, readiness, the served document and its reference page. */
export function addOperatorRoutes(app: express.Express, ctx: AppContext): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const checks = await Promise.allSettled([withinReadinessBudget(writable(ctx.pool)), ctx.redis ? withinReadinessBudget(ctx.redis.ping()) : Promise.resolve('not configured')]);
    const [database, redis] = checks.map((check) => (check.status === 'fulfilled' ? 'ok' : 'unreachable'));
    // Reachable but read-only (a replica, mid-failover) is not ready: every write would be a 503.
    const databaseState = checks[0].status === 'fulfilled' && checks[0].value === false ? 'read_only' : database;
    const ready = databaseState === 'ok' && redis === 'ok';
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', database: databaseState, redis: ctx.redis ? redis : 'not configured' });
  });
  const servedDocument = documentForClients(ctx.config.PUBLIC_URL);
  app.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(servedDocument);
  });
  // The reference page shares the console's origin: it gets the same headers, with a CSP that
  // lets Redoc run (its own script; the styles and the search worker it creates at runtime).
  const docsHeaders = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        workerSrc: ["'self'", 'blob:'],
        formAction: ["'none'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'same-origin' },
    strictTransportSecurity: ctx.config.PUBLIC_URL.startsWith('https://'),
  });
  app.get('/docs', docsHeaders, docsPage);
  app.get('/docs/redoc.standalone.js', docsHeaders, (_req, res) => {
    res.sendFile(require.resolve('redoc/bundles/redoc.standalone.js'));
  });
}
