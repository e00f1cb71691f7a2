import { housekeeping } from '../housekeeping.js';
import type { PeriodicTask } from '../scheduler.js';
import type { JobDeps } from '../worker-deps.js';

const HOUSEKEEPING_EVERY_MS = 10 * 60 * 1000;

/** Deletes what has outlived its purpose: at start, then every ten minutes. */
export function housekeepingTask(deps: JobDeps): PeriodicTask {
  return {
    name: 'housekeeping',
    intervalMs: HOUSEKEEPING_EVERY_MS,
    async step() {
      await housekeeping(deps.db, deps.config.DELIVERY_RETENTION_DAYS);
      // A run deletes everything due, batch after batch: nothing is left for an immediate next step.
      return 0;
    },
  };
}
