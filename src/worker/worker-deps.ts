import type { OutageLog } from '../db/availability.js';
import type { DeliveryDeps } from '../deliveries/deliver.js';
import type { Metrics } from '../metrics/metrics.js';

/** What the worker needs from its process: delivering's dependencies and the process's metrics. */
export interface WorkerDeps extends DeliveryDeps {
  metrics: Metrics;
}

/**
 * What every job of one worker is built from (src/worker/context.ts makes it): the process's
 * dependencies, the id its claims carry, how long a claim lasts, and the log that reports a
 * database outage once for all its jobs.
 */
export interface JobDeps extends WorkerDeps {
  workerId: string;
  leaseMs: number;
  outage: OutageLog;
}
