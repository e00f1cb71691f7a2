import { describe, expect, it } from '@jest/globals';
import type { Express } from 'express';
import { MemoryStore } from 'express-rate-limit';
import { createApp } from '../../src/http/app.js';
import { testBed } from '../support/test-bed.js';

// The tests validate every response against the document (startTestApp). That must not
// change what a request meets: the steps that check requests are the ones production runs.

const bed = testBed();

// What express-openapi-validator adds around its request check: its set-up layers, which check
// nothing of a request, and the response check.
const VALIDATOR_SET_UP = new Set(['pathParamsMiddleware', 'metadataMiddleware', 'securityMiddleware', 'multipartMiddleware', 'responseMiddleware']);

interface RouteLayer {
  route?: { path: string; methods: Record<string, boolean>; stack: Array<{ name: string }> };
}

/** Per route of the API, the names of the steps a request goes through, without the validator's set-up layers. */
function requestChecks(app: Express): Record<string, string[]> {
  const layers = (app as unknown as { router: { stack: RouteLayer[] } }).router.stack;
  return Object.fromEntries(
    layers.flatMap(({ route }) => {
      const methods = Object.keys(route?.methods ?? {});
      if (!route || methods.length !== 1 || !route.path.startsWith('/api/')) return [];
      return [[`${methods[0]} ${route.path}`, route.stack.map((step) => step.name || 'anonymous').filter((name) => !VALIDATOR_SET_UP.has(name))]];
    }),
  );
}

describe('the app the tests run', () => {
  it('checks requests with the steps production runs on every route: no request validator on GET /me and GET /leads/{id}', () => {
    const { t } = bed;
    const production = createApp({ ...t.ctx, validateResponses: false, rateLimitStore: new MemoryStore() });
    const tested = requestChecks(t.app);
    expect(Object.keys(tested).sort()).toEqual(['get /api/v1/leads/:id', 'get /api/v1/me', 'get /api/v1/tags', 'post /api/v1/leads', 'post /api/v1/leads/batch']);
    expect(tested).toEqual(requestChecks(production));
    expect(tested['get /api/v1/me']).not.toContain('requestMiddleware');
    expect(tested['get /api/v1/leads/:id']).not.toContain('requestMiddleware');
  });
});
