import type { Config } from '../config.js';
import type { HealthPolicy } from '../endpoints/repository.js';
import type { FailingEndpoint } from './attempt-repository.js';

// Endpoint health: an endpoint whose every attempt has failed for ENDPOINT_DISABLE_AFTER_DAYS,
// at least ENDPOINT_DISABLE_AFTER_FAILURES of them in a row, is disabled by the worker that
// records such a failure. "Now" is the database's, so every worker judges by one clock.

export const healthPolicy = (config: Pick<Config, 'ENDPOINT_DISABLE_AFTER_DAYS' | 'ENDPOINT_DISABLE_AFTER_FAILURES'>): HealthPolicy => ({
  failingForSeconds: config.ENDPOINT_DISABLE_AFTER_DAYS * 24 * 60 * 60,
  minFailures: config.ENDPOINT_DISABLE_AFTER_FAILURES,
});

/** Why an endpoint was disabled, as `connector list` / `workflow list` show it. */
export function disabledReason(endpoint: FailingEndpoint): string {
  const since = new Date(endpoint.failing_since).toISOString();
  const last = endpoint.last_error === null ? '' : `; the last: ${endpoint.last_error}`;
  return `every attempt failed since ${since}, ${endpoint.consecutive_failures} in a row and none delivered${last}`;
}
