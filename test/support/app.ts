import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { Options, Store } from 'express-rate-limit';
import { pino, type Logger } from 'pino';
import supertest from 'supertest';
import { loadConfig, type Config } from '../../src/config.js';
import { createContext, type AppContext } from '../../src/context.js';
import { ProcessDatabase } from '../../src/db/open.js';
import { createApp, type ApiVersion } from '../../src/http/app.js';
import { createTestDatabase } from './database.js';
import { eventually } from './eventually.js';
import { readTestEnvironment } from './env.js';
import { startPrism } from './prism.js';
import { expectMatchesDocument } from './document-check.js';

export interface TestApp {
  ctx: AppContext;
  databaseUrl: string;
  app: Express;
  http: ReturnType<typeof supertest>;
  /** Serves the app on a free port of 127.0.0.1 (once) and gives its base URL, for clients that need a real socket. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Use the run's Redis (when configured) for the rate limiter; default: in-process store. */
  redis?: boolean;
  /** A second API process on the first one's database (closing it leaves the database). */
  sameDatabaseAs?: TestApp;
  /** The rate limit's window, shortened so a test can see it pass (the service's is a minute). */
  rateLimitWindowMs?: number;
  /** Serve these path versions instead of openapi/'s (a changed copy: test/support/contract-copy.ts). */
  versions?: ApiVersion[];
  /** The app's (and its worker's) logger; default: silent. */
  logger?: Logger;
}

const running = new Map<AppContext, string>();

/**
 * Resolves once every running test app on the database behind `db` accepts a key with this
 * prefix. A key made in the test process reaches the apps' prefix views through NOTIFY, like
 * a key made by the CLI, a few milliseconds after its commit: fixtures wait for that instead
 * of racing it with their first request.
 */
export async function knownToRunningApps(db: AppContext['db'], prefix: string): Promise<void> {
  const databaseUrl = [...running].find(([ctx]) => ctx.db === db)?.[1];
  const apps = [...running].filter(([, url]) => url === databaseUrl).map(([ctx]) => ctx);
  await eventually(async () => apps.every((ctx) => ctx.apiKeyPrefixes.mayExist(prefix)), 15_000, 2);
}

/**
 * With TEST_THROUGH_PRISM_PROXY=1 every test request goes through Prism's validation proxy
 * (`prism proxy`, without --errors: it forwards everything and reports what breaks the
 * document). A response that breaks the document fails the test file when its app closes.
 * Requests the tests send invalid on purpose are reported too, and are not counted.
 */
const THROUGH_PRISM_PROXY = process.env.TEST_THROUGH_PRISM_PROXY === '1';

async function startPrismProxy(upstream: string): Promise<{ url: string; responseViolations(): string[]; stop(): void }> {
  const prism = await startPrism(['proxy', upstream]);
  return {
    url: prism.url,
    responseViolations: () =>
      prism
        .log()
        .split('\n')
        .filter((line) => /Violation: response/.test(line)),
    stop: prism.stop,
  };
}

/** The store, counting in windows of `windowMs` whatever window the limiter asks for. */
function withWindow(store: Store, windowMs: number): Store {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'init') return (options: Options) => target.init?.({ ...options, windowMs });
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete', 'head', 'options']);

/**
 * supertest whose every answer is also checked against the OpenAPI document (status, content
 * type, body), after the test's own assertions are attached: a request the test awaits
 * fails when the service answered something the document does not allow.
 */
export function checkedAgainstDocument(agent: ReturnType<typeof supertest>): ReturnType<typeof supertest> {
  return new Proxy(agent, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof property !== 'string' || !METHODS.has(property) || typeof value !== 'function') return value;
      return (url: string, ...rest: unknown[]) =>
        (value as (...args: unknown[]) => supertest.Test)
          .call(target, url, ...rest)
          .expect((response) => expectMatchesDocument(property, url, { status: response.status, contentType: response.headers['content-type'], text: response.text ?? '' }));
    },
  });
}

/**
 * The real app on a private database, answered over HTTP by supertest, with response
 * validation against the OpenAPI document switched on.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.sameDatabaseAs ? { url: options.sameDatabaseAs.databaseUrl, drop: async () => {} } : await createTestDatabase();
  const testEnv = readTestEnvironment();
  const config: Config = loadConfig({
    LOG_LEVEL: 'silent',
    WORKER: 'off',
    // The suite shares a loaded machine: opening a connection can take longer than the
    // default 1.5 s there. Tests of that bound run with the default (database-unavailable.test.ts).
    DATABASE_CONNECT_TIMEOUT_MS: '10000',
    ...(options.redis && testEnv.redisUrl ? { REDIS_URL: testEnv.redisUrl } : {}),
    ...options.env,
  });
  const logger = options.logger ?? pino({ level: 'silent' });
  // The same shape as `npm start`: the process's database (here the test's) hands the root its pool.
  const processDatabase = await ProcessDatabase.open({ ...config, DATABASE_URL: database.url }, logger);
  const ctx = await createContext(config, { database: processDatabase, logger, validateResponses: true });
  const app = createApp(options.rateLimitWindowMs ? { ...ctx, rateLimitStore: withWindow(ctx.rateLimitStore, options.rateLimitWindowMs) } : ctx, options.versions);
  let server: Server | undefined;
  const listen = async () => {
    if (!server) {
      server = app.listen(0, '127.0.0.1');
      await once(server, 'listening');
    }
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const proxy = THROUGH_PRISM_PROXY ? await startPrismProxy(await listen()) : null;
  running.set(ctx, database.url);
  return {
    ctx,
    databaseUrl: database.url,
    app,
    http: checkedAgainstDocument(supertest(proxy ? proxy.url : app)),
    listen,
    async close() {
      proxy?.stop();
      if (server) {
        server.closeAllConnections();
        await new Promise((resolve) => server!.close(resolve));
      }
      running.delete(ctx);
      await ctx.close();
      await processDatabase.close();
      await database.drop();
      const violations = proxy?.responseViolations() ?? [];
      if (violations.length > 0) throw new Error(`Prism's validation proxy found responses that break the document:\n${violations.join('\n')}`);
    },
  };
}
