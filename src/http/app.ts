import { createRequire } from 'node:module';
import express, { type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { AppContext } from '../context.js';
import { OPENAPI_PATH } from '../paths.js';
import { getLeadHandler } from '../leads/get-lead.js';
import { createLeadHandler } from '../leads/create-lead.js';
import { createBatchHandler } from '../leads/create-batch.js';
import { getMeHandler } from '../me/get-me.js';
import { listTagsHandler } from '../tags/list-tags.js';
import { authenticate, requireScope } from './auth.js';
import { errorHandler, routeNotFound } from './errors.js';
import { perKeyRateLimit } from './rate-limit.js';
import { requestLogging } from './request-log.js';
import { docsPage } from '../docs/docs-page.js';

const require = createRequire(import.meta.url);

export function createApp(ctx: AppContext): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  app.use(requestLogging(ctx.logger));

  // Check order per route: authenticate, rate limit, scope, parse and validate the body, handler.
  const auth = authenticate(ctx.db, ctx.apiKeyCache, ctx.config.DOCUMENTATION_URL);
  const limit = perKeyRateLimit(ctx.rateLimitStore, ctx.config.RATE_LIMIT_PER_MINUTE);
  // PostgreSQL refuses NUL characters in text and jsonb: strip them so hostile input
  // cannot turn into a 500.
  const json = express.json({
    limit: '1mb',
    strict: false,
    type: () => true,
    reviver: (_key, value: unknown) => (typeof value === 'string' && value.includes('\u0000') ? value.replaceAll('\u0000', '') : value),
  });
  // The validator writes defaults into req.body; idempotency fingerprints the body as sent.
  const keepBodyAsSent: RequestHandler = (req, _res, next) => {
    if (req.get('idempotency-key') !== undefined) req.bodyAsSent = structuredClone(req.body);
    next();
  };
  const validate = OpenApiValidator.middleware({
    apiSpec: OPENAPI_PATH,
    validateRequests: { allowUnknownQueryParameters: true, allErrors: true },
    validateResponses: ctx.validateResponses ? { onError: (error) => { throw error; } } : false,
    validateSecurity: false,
    validateApiSpec: ctx.validateResponses,
  });
  const jsonOnly: RequestHandler = (req, _res, next) => {
    if (!req.is('application/json') && req.headers['content-length'] !== '0') {
      next(Object.assign(new Error('unsupported media type'), { status: 415 }));
      return;
    }
    next();
  };
  const numericId: RequestHandler = (req, _res, next) => { next(/^\d+$/.test(String(req.params.id)) ? undefined : 'route'); };

  // Routes under /api/v1 sit on the app itself rather than in a mounted router, which would
  // cost every API request a second round of prefix matching.
  type Handlers = Array<RequestHandler | RequestHandler[]>;
  const api = {
    get: (path: string, ...handlers: Handlers) => app.get(`/api/v1${path}`, ...(handlers as RequestHandler[])),
    post: (path: string, ...handlers: Handlers) => app.post(`/api/v1${path}`, ...(handlers as RequestHandler[])),
  };
  // GET /me declares no parameters and no body, so the request validator has nothing to check
  // there, yet it costs about a third of a bare route's throughput (bench/README.md): it runs
  // only where responses are validated too (the tests).
  api.get('/me', auth, limit, ...(ctx.validateResponses ? [validate] : []), getMeHandler(ctx));
  api.get('/tags', auth, limit, requireScope('tags:read'), validate, listTagsHandler(ctx));
  api.get('/leads/:id', numericId, auth, limit, requireScope('leads:read'), validate, getLeadHandler(ctx));
  api.post('/leads/batch', auth, limit, requireScope('leads:write'), jsonOnly, json, keepBodyAsSent, validate, createBatchHandler(ctx));
  api.post('/leads', auth, limit, requireScope('leads:write'), jsonOnly, json, keepBodyAsSent, validate, createLeadHandler(ctx));

  // Operator routes after the API: their paths never overlap it, and API requests (the hot
  // ones) then skip matching them.
  app.get('/healthz', (_req, res) => { res.json({ status: 'ok' }); });
  app.get('/readyz', async (_req, res) => {
    const checks = await Promise.allSettled([
      ctx.pool.query('SELECT 1'),
      ctx.redis ? ctx.redis.ping() : Promise.resolve('not configured'),
    ]);
    const [database, redis] = checks.map((check) => (check.status === 'fulfilled' ? 'ok' : 'unreachable'));
    const ready = database === 'ok' && redis === 'ok';
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', database, redis: ctx.redis ? redis : 'not configured' });
  });
  app.get('/openapi.yaml', (_req, res) => { res.type('application/yaml').sendFile(OPENAPI_PATH); });
  app.get('/docs', docsPage);
  app.get('/docs/redoc.standalone.js', (_req, res) => { res.sendFile(require.resolve('redoc/bundles/redoc.standalone.js')); });

  app.use(routeNotFound);
  app.use(errorHandler(ctx.logger));
  return app;
}
