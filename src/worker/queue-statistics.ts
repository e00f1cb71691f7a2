import { analyzeWhereAutovacuumWouldNot } from '../db/queue-statistics.js';
import type { PeriodicTask } from './scheduler.js';
import type { JobDeps } from './worker-deps.js';

/** As often as autovacuum looks at a table by default (autovacuum_naptime). */
const QUEUE_STATISTICS_EVERY_MS = 60 * 1000;

/** Keeps the queues' statistics where the server does not (src/db/queue-statistics.ts says why). */
export function queueStatisticsTask(deps: JobDeps): PeriodicTask {
  return {
    name: 'queue-statistics',
    intervalMs: QUEUE_STATISTICS_EVERY_MS,
    async step() {
      const analyzed = await analyzeWhereAutovacuumWouldNot(deps.db);
      if (analyzed.length > 0) deps.logger.debug({ tables: analyzed }, 'analyzed queue tables (autovacuum is off)');
      return 0;
    },
  };
}
