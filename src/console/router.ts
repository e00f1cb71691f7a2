import express, { type Router } from 'express';
import helmet from 'helmet';
import type { AppContext } from '../context.js';
import { consoleErrors, consoleNotFound } from './errors.js';
import { addAuditRoutes } from './routes/audit.js';
import { addCompanyRoutes } from './routes/companies.js';
import { addConnectorRoutes } from './routes/connectors.js';
import { addDeliveryRoutes } from './routes/deliveries.js';
import { addKeyRoutes } from './routes/keys.js';
import { addLeadImportRoutes, importUpload } from './routes/lead-imports.js';
import { addLeadRoutes } from './routes/leads.js';
import { addLeadErasureRoutes } from './routes/lead-erasure.js';
import { addMemberRoutes } from './routes/members.js';
import { addOverviewRoutes } from './routes/overview.js';
import { addPasswordRoutes } from './routes/password.js';
import { addSignInRoutes } from './routes/sign-in.js';
import { addTagRoutes } from './routes/tags.js';
import { addWorkflowRoutes } from './routes/workflows.js';
import { requireChangeRight, requireHttps, requireSession, sameOriginPosts } from './session.js';
import { STATIC_DIR } from './views.js';

/**
 * The workspace console, mounted at /console: server-rendered pages over the services the CLI
 * uses. Everything the app adds for the API (JSON 404s, the docs page's CSP) stays out: the
 * console has its own headers, body parser, 404 and error pages.
 */
export function consoleRouter(ctx: AppContext): Router {
  const router = express.Router({ strict: true, caseSensitive: true });
  router.use(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        // No inline script or style and no other origin: a value that slipped through
        // escaping still could not run.
        directives: {
          defaultSrc: ["'none'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'"],
          connectSrc: ["'self'"],
          formAction: ["'self'"],
          frameAncestors: ["'none'"],
          baseUri: ["'none'"],
        },
      },
      xFrameOptions: { action: 'deny' },
      // Not no-referrer: under it Chromium sends `Origin: null` with form posts, which the Origin check must refuse.
      referrerPolicy: { policy: 'same-origin' },
      strictTransportSecurity: ctx.config.PUBLIC_URL.startsWith('https://'),
    }),
  );
  router.use(requireHttps(ctx.config));
  router.use('/static', express.static(STATIC_DIR, { index: false, maxAge: '1h', fallthrough: true }));
  router.use((_req, res, next) => {
    // Pages hold a workspace's data and, once, a key's token: nothing is kept by caches or history.
    res.set('Cache-Control', 'no-store');
    next();
  });
  router.use(express.urlencoded({ extended: false, limit: '256kb', parameterLimit: 500 }));
  router.use(importUpload);
  router.use(sameOriginPosts(ctx.config));
  addSignInRoutes(router, ctx);

  router.use(requireSession(ctx.db, ctx.config));
  addSignInRoutes.signOut(router, ctx);
  addPasswordRoutes(router, ctx);
  router.use((req, res, next) => (req.method === 'POST' ? requireChangeRight(req, res, next) : next()));
  addOverviewRoutes(router, ctx);
  addLeadImportRoutes(router, ctx);
  addLeadRoutes(router, ctx);
  addLeadErasureRoutes(router, ctx);
  addKeyRoutes(router, ctx);
  addConnectorRoutes(router, ctx);
  addDeliveryRoutes(router, ctx);
  addWorkflowRoutes(router, ctx);
  addTagRoutes(router, ctx);
  addCompanyRoutes(router, ctx);
  addMemberRoutes(router, ctx);
  addAuditRoutes(router, ctx);
  router.use(consoleNotFound);
  router.use(consoleErrors(ctx.logger));
  return router;
}
