import type { Express } from 'express';
import { pino } from 'pino';
import supertest from 'supertest';
import { loadConfig, type Config } from '../../src/config.js';
import { createContext, type AppContext } from '../../src/context.js';
import { createApp } from '../../src/http/app.js';
import { createTestDatabase } from './database.js';
import { readTestEnvironment } from './env.js';

export interface TestApp {
  ctx: AppContext;
  databaseUrl: string;
  app: Express;
  http: ReturnType<typeof supertest>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Use the run's Redis (when configured) for the rate limiter; default: in-process store. */
  redis?: boolean;
  /** A second API process on the first one's database (closing it leaves the database). */
  sameDatabaseAs?: TestApp;
}

/**
 * The real app on a private database, answered over HTTP by supertest, with response
 * validation against the OpenAPI document switched on.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.sameDatabaseAs
    ? { url: options.sameDatabaseAs.databaseUrl, drop: async () => {} }
    : await createTestDatabase();
  const testEnv = readTestEnvironment();
  const config: Config = loadConfig({
    LOG_LEVEL: 'silent',
    WORKER: 'off',
    ...(options.redis && testEnv.redisUrl ? { REDIS_URL: testEnv.redisUrl } : {}),
    ...options.env,
  });
  const ctx = await createContext(config, { databaseUrl: database.url, logger: pino({ level: 'silent' }), validateResponses: true });
  const app = createApp(ctx);
  return {
    ctx,
    databaseUrl: database.url,
    app,
    http: supertest(app),
    async close() {
      await ctx.close();
      await database.drop();
    },
  };
}
