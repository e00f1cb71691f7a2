import { Redis } from 'ioredis';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Store } from 'express-rate-limit';
import { ApiKeyCache } from './api-keys/key-cache.js';
import { createRateLimitStore } from './api-keys/rate-limit-store.js';
import type { KeyForAuthentication } from './api-keys/repository.js';
import { PrefixView } from './api-keys/prefix-view.js';
import type { Config } from './config.js';
import { OutageLog } from './db/availability.js';
import type { Db } from './db/connect.js';
import { isCitusCoordinator } from './db/distribution.js';
import { FairSlots } from './db/fair-slots.js';
import type { ProcessDatabase } from './db/open.js';
import { createLogger } from './logger.js';
import { LeadReads } from './leads/read-service.js';
import { runGroupTransaction } from './leads/intake/executor.js';
import { runningGroups, WriteGroups } from './leads/intake/write-groups.js';
import { createMetrics, type Metrics } from './metrics/metrics.js';
import { freeMailDomains } from './normalize.js';
import { suppressionScreen, type SuppressionScreen } from './leads/suppression-screen.js';

// Above the 10 s an Idempotency-Key waits for a concurrent request with the same key, far
// above any statement of a request; it ends runaway statements and forgotten transactions.
const API_STATEMENT_TIMEOUT_MS = 15_000;

// The API's composition root: everything with a lifecycle is built here from validated config
// and the process's database, and closed here, so handlers receive their collaborators instead
// of importing them. Its pool belongs to the process's database, which closes it after close(),
// as the worker's root (src/worker/context.ts) does.
export interface AppContext {
  config: Config;
  logger: Logger;
  pool: pg.Pool;
  db: Db;
  /** Runs the lead writes: concurrent POST /leads calls of this process share a transaction. */
  writeGroups: WriteGroups;
  /** Refuses the people erased with suppression, before their writes are planned. */
  suppressionScreen: SuppressionScreen;
  /** Reads GET /leads/{id}: concurrent reads of one event-loop turn share a statement. */
  leadReads: LeadReads;
  /** This process's metrics: counted always, served on METRICS_PORT when it is set. */
  metrics: Metrics;
  redis: Redis | null;
  rateLimitStore: Store;
  apiKeyCache: ApiKeyCache<KeyForAuthentication>;
  /** The existing key prefixes, following the cache's LISTEN connection. */
  apiKeyPrefixes: PrefixView;
  /** Answers responses against the OpenAPI document too (tests). */
  validateResponses: boolean;
  /** Stops the key cache's LISTEN connection and Redis; the pool is left to the process's database. */
  close(): Promise<void>;
}

export interface ContextOptions {
  database: ProcessDatabase;
  logger?: Logger;
  validateResponses?: boolean;
}

export async function createContext(config: Config, options: ContextOptions): Promise<AppContext> {
  const logger = options.logger ?? createLogger(config.LOG_LEVEL);
  const metrics = createMetrics({ processMetrics: config.METRICS_PORT !== undefined });
  const { pool, db } = options.database.openPool('api', config.DATABASE_POOL_SIZE, {
    metrics,
    // A request waits at most this long for a connection (a new one, or a busy pool's), so it
    // is answered within 2 s by default even when the server does not answer at all (then 503).
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: API_STATEMENT_TIMEOUT_MS,
  });
  // Built now rather than by the first request that files a lead by its email.
  freeMailDomains();

  let redis: Redis | null = null;
  if (config.REDIS_URL) {
    // No offline queue: while Redis is down, commands fail at once and the rate limiter
    // falls back to per-process counting instead of making requests wait. ioredis keeps
    // reconnecting by itself; its errors are reported once per outage.
    redis = new Redis(config.REDIS_URL, { enableAutoPipelining: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    const outage = new OutageLog(logger, {
      down: 'Redis is unreachable: rate limiting per process until it answers again (logged once per outage)',
      up: 'Redis reachable again: rate limiting shared across processes',
    });
    redis.on('error', (error) => outage.failed(error));
    redis.on('ready', () => outage.recovered());
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2000);
      redis!.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    if (redis.status !== 'ready') outage.failed(new Error(`Redis not ready within 2 s at start-up (status ${redis.status})`));
  } else {
    logger.warn('REDIS_URL is not set: the rate limit is counted in this process only (fine for one process, wrong for several)');
  }
  const rateLimitStore = createRateLimitStore(redis, logger);
  const apiKeyCache = new ApiKeyCache<KeyForAuthentication>(options.database.url, logger);
  const apiKeyPrefixes = new PrefixView(db, logger);
  apiKeyCache.follow(apiKeyPrefixes);
  await apiKeyCache.start();

  // On a Citus coordinator, the write groups are of one workspace each (src/leads/intake/write-groups.ts).
  const groupsOfOneWorkspace = await isCitusCoordinator(db);

  return {
    config,
    logger,
    pool,
    db,
    writeGroups: new WriteGroups(
      // Statements may span workspaces (on plain PostgreSQL; the executor knows a Citus coordinator).
      (requests, commits) => runGroupTransaction(db, requests, logger, { commits, acrossWorkspaces: true }),
      logger,
      {
        queueLimit: config.WRITE_QUEUE_LIMIT,
        slots: FairSlots.forPool(config.DATABASE_POOL_SIZE, runningGroups(groupsOfOneWorkspace)),
        groupRan: metrics.intake.groupRan,
        oneWorkspace: groupsOfOneWorkspace,
      },
    ),
    leadReads: new LeadReads(db),
    suppressionScreen: suppressionScreen(db),
    metrics,
    redis,
    rateLimitStore,
    apiKeyCache,
    apiKeyPrefixes,
    validateResponses: options.validateResponses ?? false,
    async close() {
      await apiKeyCache.stop();
      await rateLimitStore.shutdown?.();
      redis?.disconnect();
    },
  };
}
