import type pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics/metrics.js';
import { createDb, createPool, type Db } from './connect.js';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './embedded/start.js';
import { migrateToLatest } from './migrate.js';

export interface PoolSettings {
  /** Counted in these metrics under the pool's name (a process serving /metrics). */
  metrics?: Metrics;
  /** How long a checkout may wait for a connection (default: connect.ts's). */
  connectTimeoutMs?: number;
  /** Ends a statement, or a transaction left idle, running longer than this. */
  statementTimeoutMs?: number;
}

/** A pool of the process: Kysely over it, and the pg pool itself for what counts or inspects connections. */
export interface ProcessPool {
  db: Db;
  pool: pg.Pool;
}

/**
 * The database as every process opens it (`npm start`, `npm run worker`, `npm run migrate`,
 * the CLI): DATABASE_URL, or without it the embedded PostgreSQL, started or joined for the
 * length of the process. The pools a process opens here are closed here, before the embedded
 * server is left, so no process closes them in another order.
 */
export class ProcessDatabase {
  private readonly pools: Db[] = [];

  private constructor(
    /** Where every pool of the process connects. */
    readonly url: string,
    private readonly embedded: EmbeddedDatabase | null,
    private readonly logger: Logger,
  ) {}

  static async open(config: Config, logger: Logger): Promise<ProcessDatabase> {
    if (config.DATABASE_URL) return new ProcessDatabase(config.DATABASE_URL, null, logger);
    const embedded = await startEmbeddedDatabase({ dir: config.EMBEDDED_PG_DIR, port: config.EMBEDDED_PG_PORT, logger });
    return new ProcessDatabase(embedded.url, embedded, logger);
  }

  /** A pool of this process, named in its log lines and metrics; closed by close(). */
  pool(name: string, size: number, settings: PoolSettings = {}): Db {
    return this.openPool(name, size, settings).db;
  }

  /** pool(), with the pg pool beside it. */
  openPool(name: string, size: number, settings: PoolSettings = {}): ProcessPool {
    const { metrics, ...timeouts } = settings;
    const pool = createPool(this.url, size, { logger: this.logger, name, ...timeouts });
    metrics?.watchPool(name, pool);
    const db = createDb(pool);
    this.pools.push(db);
    return { db, pool };
  }

  /**
   * Applies the pending migrations; returns their names. On a connection of its own: a
   * migration may run longer than a pool's statement timeout allows.
   */
  async migrate(): Promise<string[]> {
    const db = createDb(createPool(this.url, 1, { logger: this.logger, name: 'migrate' }));
    return migrateToLatest(db).finally(() => db.destroy());
  }

  /** Once nothing uses them any more: the pools, then the embedded server (left running while another process uses it). */
  async close(): Promise<void> {
    for (const db of this.pools.splice(0).reverse()) await db.destroy();
    await this.embedded?.close();
  }
}
