import express, { type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { AppContext } from '../context.js';
import { consoleRouter } from '../console/router.js';
import { reportUnavailable } from '../db/connect.js';
import { OPENAPI_PATH, PUBLISHED_OPENAPI_PATH } from '../paths.js';
import { readContract } from './contract-routes.js';
import { announceDeprecation, noticeDeprecatedFields, readDeprecations } from './deprecation.js';
import { errorHandler, routeNotFound } from './errors.js';
import { createLeadHandler } from './handlers/create-lead.js';
import { createLeadsBatchHandler } from './handlers/create-leads-batch.js';
import { getLeadHandler } from './handlers/get-lead.js';
import { getMeHandler } from './handlers/get-me.js';
import { listTagsHandler } from './handlers/list-tags.js';
import { authenticate, requireScope } from './middleware/auth.js';
import { inOrder } from './middleware/in-order.js';
import { perKeyConcurrencyLimit } from './middleware/concurrency-limit.js';
import { adaptToVersion, type VersionAdapter } from './middleware/version-adapter.js';
import { jsonBody } from './middleware/json-body.js';
import { timeOperation } from './middleware/metrics.js';
import { perKeyRateLimit } from './middleware/rate-limit.js';
import { requestLogging } from './middleware/request-log.js';
import { integerPathParameters, matchesContract, methodNotAllowed, rejectUnknownQueryParameters } from './middleware/route-guards.js';
import type { OperationHandlers, OperationId } from './operations.js';
import { addOperatorRoutes } from './operator-routes.js';

/**
 * The documents an app serves: the source the routes and the request validator read, and the
 * published document built from it (what it deprecates, with the headers that say so).
 */
export interface ContractDocuments {
  source: string;
  published: string;
}
export const CONTRACT_DOCUMENTS: ContractDocuments = { source: OPENAPI_PATH, published: PUBLISHED_OPENAPI_PATH };

/**
 * A path version of the API (`/api/v1`, later `/api/v2`: README, "Changing the contract"):
 * its documents, whose operations the same handlers serve by operationId, and, where its
 * shapes differ from the handlers' (the first version's), how a request body is brought to
 * the handler's shape and an answer to the version's.
 */
export interface ApiVersion {
  documents: ContractDocuments;
  adapt?: VersionAdapter;
}

export function createApp(ctx: AppContext, versions: ApiVersion[] = [{ documents: CONTRACT_DOCUMENTS }]): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // Paths are matched exactly as the document writes them: `/api/v1/me/` and `/API/v1/me`
  // are unknown routes, as they are for the request validator and the Prism mock.
  app.set('strict routing', true);
  app.set('case sensitive routing', true);
  // req.ip, which the console's sign-in throttle counts, is the client's only through trusted proxies.
  app.set('trust proxy', ctx.config.TRUST_PROXY);

  app.use(requestLogging(ctx.logger));
  const handlers: OperationHandlers = {
    getMe: getMeHandler(ctx),
    listTags: listTagsHandler(ctx),
    createLead: createLeadHandler(ctx),
    createLeadsBatch: createLeadsBatchHandler(ctx),
    getLead: getLeadHandler(ctx),
  };
  // One authentication, rate limit and in-flight count for every version: a key's budget is the key's.
  const inFlight = perKeyConcurrencyLimit(ctx.config.CONCURRENT_REQUESTS_PER_KEY, () => ctx.metrics.http.concurrencyLimited());
  ctx.metrics.http.watchRequestsInProgress(inFlight.inProgress);
  const keySteps: KeySteps = {
    auth: authenticate(ctx.db, ctx.apiKeyCache, ctx.apiKeyPrefixes, ctx.config.DOCUMENTATION_URL),
    limit: perKeyRateLimit(ctx.rateLimitStore, ctx.config.RATE_LIMIT_PER_MINUTE, () => ctx.metrics.http.rateLimited()),
    inFlight: inFlight.handler,
  };
  for (const version of versions) addOperationRoutes(app, ctx, handlers, version, keySteps);
  // Operator routes after the API: their paths never overlap it, and API requests (the hot
  // ones) then skip matching them.
  addOperatorRoutes(app, ctx);
  // The console has its own headers, 404 and error pages: mounted before the app-wide ones.
  app.use('/console', consoleRouter(ctx));
  app.use(routeNotFound);
  app.use(errorHandler(ctx.logger, (error) => reportUnavailable(ctx.pool, error)));
  return app;
}

/**
 * Each operation of the document, with the per-route steps in the check order: route and
 * method matched (else 404 / 405), a deprecated operation's headers (on every answer), start
 * timing the request, authenticate, rate limit, the key's requests in flight, scope, parse the
 * body, reject unknown query parameters, validate, note deprecated properties sent, bring the
 * request to the handler's shape and its answer to the version's (a later version), handler; bound as one handler per route (inOrder). Routes sit on the app itself rather than
 * in a mounted router, which would cost every API request a second round of prefix matching.
 */
interface KeySteps {
  auth: RequestHandler;
  limit: RequestHandler;
  inFlight: RequestHandler;
}

function addOperationRoutes(app: express.Express, ctx: AppContext, handlers: OperationHandlers, { documents, adapt }: ApiVersion, { auth, limit, inFlight }: KeySteps): void {
  const validator = (validateRequests: boolean) =>
    OpenApiValidator.middleware({
      apiSpec: documents.source,
      validateRequests: validateRequests && { allowUnknownQueryParameters: true, allErrors: true },
      validateResponses: ctx.validateResponses
        ? {
            onError: (error) => {
              throw error;
            },
          }
        : false,
      validateSecurity: false,
      // The document takes JSON bodies only (jsonBody refuses any other type first): no multer step.
      fileUploader: false,
      validateApiSpec: ctx.validateResponses,
    });
  const validate = validator(true);
  // Where responses are validated (the tests), routes without the request validator get one
  // that checks responses only: the requests then meet the same checks as in production.
  const validateResponsesOnly = ctx.validateResponses ? validator(false) : null;

  const contract = readContract(documents.source);
  const deprecations = readDeprecations(documents.published);
  const bound = new Set(contract.operations.map((operation) => operation.operationId));
  const unbound = Object.keys(handlers).filter((operationId) => !bound.has(operationId as OperationId));
  if (unbound.length > 0) throw new Error(`handlers without an operation in the OpenAPI document: ${unbound.join(', ')}`);

  for (const operation of contract.operations) {
    // The one place where a typed handler meets express's untyped request: the validator
    // runs before it on every route that has input, so the request has the document's types.
    const handler = handlers[operation.operationId] as unknown as RequestHandler | undefined;
    if (!handler) throw new Error(`no handler for the operation ${operation.operationId} of the OpenAPI document`);
    // An operation with no parameters and no body (GET /me) gives the request validator
    // nothing to check, yet running it is a large part of such a cheap route's work; one with
    // only integer path parameters (GET /leads/{id}) has them checked by integerPathParameters.
    const validatesRequests = !operation.declaresNoInput && !operation.integerPathOnly;
    const deprecationHeaders = deprecations.headers.get(operation.operationId);
    const deprecatedFields = deprecations.fields.get(operation.operationId);
    app[operation.method](
      operation.expressPath,
      inOrder([
        matchesContract(operation.method, operation.integerPathParameters),
        ...(deprecationHeaders ? [announceDeprecation(deprecationHeaders)] : []),
        timeOperation(ctx.metrics.http, operation.operationId),
        auth,
        limit,
        inFlight,
        ...operation.requiredScopes.map((scope) => requireScope(scope)),
        ...(operation.hasJsonBody ? jsonBody : []),
        rejectUnknownQueryParameters(operation),
        ...(operation.integerPathOnly ? [integerPathParameters(operation.integerPathOnly)] : []),
        ...(validatesRequests ? [validate] : validateResponsesOnly ? [validateResponsesOnly] : []),
        ...(deprecatedFields ? [noticeDeprecatedFields(operation.operationId, deprecatedFields)] : []),
        ...(adapt ? [adaptToVersion(operation.operationId, adapt)] : []),
        handler,
      ]),
    );
  }
  for (const path of contract.paths) app.all(path.expressPath, methodNotAllowed(path));
}
