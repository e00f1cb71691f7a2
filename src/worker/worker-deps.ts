import type { DeliveryDeps } from '../deliveries/deliver.js';
import type { Metrics } from '../metrics/metrics.js';

/** What the worker needs from its process: delivering's dependencies and the process's metrics. */
export interface WorkerDeps extends DeliveryDeps {
  metrics: Metrics;
}
