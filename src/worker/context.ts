import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { isUnavailable, OutageLog } from '../db/availability.js';
import type { ProcessDatabase } from '../db/open.js';
import { leaseMs, newWorkerId } from '../deliveries/deliver.js';
import { releaseDeliveryClaims } from '../deliveries/repository.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { releaseClaims as releaseEventClaims } from '../outbox/repository.js';
import { readBacklog } from './backlog.js';
import { runOnSchedule, runUntilIdle, type PeriodicTask, type RunningSchedule } from './scheduler.js';
import { deliveriesTask } from './deliveries/job.js';
import { fanOutTask } from './fan-out.js';
import { housekeepingTask } from './housekeeping.js';
import { queueStatisticsTask } from './queue-statistics.js';
import { websiteAnalysisTask } from './website-analysis.js';
import { leadImportsTask } from './lead-imports.js';
import type { JobDeps, WorkerDeps } from './worker-deps.js';

export interface WorkerContextOptions {
  database: ProcessDatabase;
  logger: Logger;
  /** The process's metrics; default: the worker's own. `npm start` passes the API's, so one endpoint serves both. */
  metrics?: Metrics;
  /** Connections of the worker's pool; default DATABASE_POOL_SIZE. */
  poolSize?: number;
}

/**
 * The worker's composition root: one worker id with its jobs, each on a schedule of its own
 * (fan-out of outbox events, website analyses, deliveries, housekeeping), all built from one
 * set of dependencies. Its pool belongs to the process's database, which closes it after
 * close(), as the API's root (src/context.ts) does.
 */
export class WorkerContext {
  private readonly jobs: JobDeps;
  private readonly log: Logger;
  /** What processAll() drains; housekeeping deletes by age and runs only on its schedule. */
  private readonly dueWork: readonly PeriodicTask[];
  private readonly housekeeping: PeriodicTask;
  private readonly queueStatistics: PeriodicTask;
  private running: RunningSchedule | null = null;

  constructor(deps: WorkerDeps) {
    const workerId = newWorkerId();
    this.log = deps.logger.child({ worker: workerId });
    const outage = new OutageLog(this.log, {
      down: 'worker paused: the database is unreachable; retrying every poll interval (logged once per outage)',
      up: 'worker resumed: the database is reachable again',
    });
    const { config, db, logger, metrics } = deps;
    this.jobs = { config, db, logger, metrics, workerId, leaseMs: leaseMs(config), outage };
    this.dueWork = [fanOutTask(this.jobs), websiteAnalysisTask(this.jobs), deliveriesTask(this.jobs), leadImportsTask(this.jobs)];
    this.housekeeping = housekeepingTask(this.jobs);
    this.queueStatistics = queueStatisticsTask(this.jobs);
  }

  /**
   * The worker of a process, on a pool of its own. Its commits wait for the WAL flush and the
   * synchronous standby like the API's: a claim or an attempt record a failover forgot would
   * send a delivery twice.
   */
  static fromConfig(config: Config, options: WorkerContextOptions): WorkerContext {
    const metrics = options.metrics ?? createMetrics({ processMetrics: config.METRICS_PORT !== undefined });
    const db = options.database.pool('worker', options.poolSize ?? config.DATABASE_POOL_SIZE, { metrics });
    return new WorkerContext({ config, db, logger: options.logger, metrics });
  }

  get metrics(): Metrics {
    return this.jobs.metrics;
  }

  /**
   * Runs every job on its schedule. The process's metrics report the backlog (outbox, due
   * deliveries), read through the worker's pool.
   */
  start(): void {
    if (this.running) return;
    // An outage is logged by the pool; anything else leaving the backlog gauges out is a fault to see.
    this.jobs.metrics.watchBacklog(() =>
      readBacklog(this.jobs.db).catch((error: unknown) => {
        if (!isUnavailable(error)) this.log.warn({ err: error }, 'could not read the backlog for the metrics; its gauges are left out of this scrape');
        throw error;
      }),
    );
    this.running = runOnSchedule([...this.dueWork, this.housekeeping, this.queueStatistics], { outage: this.jobs.outage, logger: this.log });
  }

  /**
   * Drains everything due now (events, analyses, deliveries, including retries that are due)
   * until nothing is left: for tests and one-off runs.
   */
  processAll(): Promise<void> {
    return runUntilIdle(this.dueWork);
  }

  /** Stops claiming, finishes in-flight deliveries and analyses, releases what this worker still holds. */
  async close(): Promise<void> {
    await this.running?.stop();
    this.running = null;
    const { db, workerId } = this.jobs;
    await Promise.all([releaseDeliveryClaims(db, workerId), releaseEventClaims(db, workerId)]).catch((error: unknown) =>
      this.log.error({ err: error }, 'could not release claims; they expire with their lease'),
    );
  }
}
