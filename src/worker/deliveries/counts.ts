import type { NewDelivery } from '../../db/schema.js';
import type { AttemptOutcome } from '../../deliveries/attempt-repository.js';
import type { WorkerMetrics } from '../../metrics/metrics.js';

// The worker's deliveries in the metrics, counted once their database record is committed.

/** A recorded attempt: its duration, and its branch when final or the retry it scheduled. */
export function countRecordedAttempt(metrics: WorkerMetrics, sender: string, outcome: AttemptOutcome): void {
  metrics.attemptTimed(outcome.durationMs / 1000);
  if (outcome.rateLimited) metrics.rateLimitWaited();
  if (outcome.branch === 'pending') metrics.retryScheduled();
  else metrics.deliveryFinished(sender, outcome.branch);
}

/** Deliveries written already Failed (a configuration error: never called). */
export function countFailedAtOnce(metrics: WorkerMetrics, deliveries: readonly NewDelivery[]): void {
  for (const delivery of deliveries) if (delivery.branch === 'Failed') metrics.deliveryFinished(delivery.sender, 'Failed');
}
