import { Redis } from 'ioredis';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Store } from 'express-rate-limit';
import { ApiKeyCache } from './api-keys/key-cache.js';
import type { Config } from './config.js';
import type { AuthenticationRow } from './http/auth.js';
import { createDb, createPool, type Db } from './db/connect.js';
import { createRateLimitStore } from './http/rate-limit.js';
import { createLogger } from './logger.js';

// The composition root: everything with a lifecycle is built here from validated config
// and closed here, so handlers and workers receive their collaborators instead of importing them.
export interface AppContext {
  config: Config;
  logger: Logger;
  pool: pg.Pool;
  db: Db;
  redis: Redis | null;
  rateLimitStore: Store;
  apiKeyCache: ApiKeyCache<AuthenticationRow>;
  /** Answers responses against the OpenAPI document too (tests). */
  validateResponses: boolean;
  close(): Promise<void>;
}

export interface ContextOptions {
  databaseUrl: string;
  logger?: Logger;
  validateResponses?: boolean;
}

export async function createContext(config: Config, options: ContextOptions): Promise<AppContext> {
  const logger = options.logger ?? createLogger(config.LOG_LEVEL);
  const pool = createPool(options.databaseUrl, config.DATABASE_POOL_SIZE);
  let closing = false;
  pool.on('error', (error) => {
    if (!closing) logger.error({ err: error }, 'idle database connection failed');
  });
  const db = createDb(pool);

  let redis: Redis | null = null;
  if (config.REDIS_URL) {
    // No offline queue: while Redis is down, commands fail at once and the rate limiter
    // falls back to per-process counting instead of making requests wait.
    redis = new Redis(config.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    redis.on('error', () => {});
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2000);
      redis!.once('ready', () => { clearTimeout(timer); resolve(); });
    });
    if (redis.status !== 'ready') logger.error('Redis is not reachable at start-up; rate limiting per process until it is');
  } else {
    logger.warn('REDIS_URL is not set: the rate limit is counted in this process only (fine for one process, wrong for several)');
  }
  const rateLimitStore = createRateLimitStore(redis, logger);
  const apiKeyCache = new ApiKeyCache<AuthenticationRow>(options.databaseUrl, logger);
  await apiKeyCache.start();

  return {
    config,
    logger,
    pool,
    db,
    redis,
    rateLimitStore,
    apiKeyCache,
    validateResponses: options.validateResponses ?? false,
    async close() {
      closing = true;
      await apiKeyCache.stop();
      await rateLimitStore.shutdown?.();
      redis?.disconnect();
      await db.destroy();
    },
  };
}
