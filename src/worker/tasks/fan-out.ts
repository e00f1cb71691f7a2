import { dueLeadEventWorkspaces, fanOutLeadEvents } from '../fan-out.js';
import type { PeriodicTask } from '../scheduler.js';
import type { JobDeps } from '../worker-deps.js';
import { WorkspaceTurns } from '../workspace-turns.js';

const FAN_OUT_BATCH = 500;

/** Lead events into deliveries, a batch per workspace in turn a step; new deliveries wake the other tasks. */
export function fanOutTask(deps: JobDeps): PeriodicTask {
  const options = { limit: FAN_OUT_BATCH, maxAttempts: deps.config.WEBHOOK_MAX_ATTEMPTS, metrics: deps.metrics.worker };
  const turns = new WorkspaceTurns(dueLeadEventWorkspaces(deps.db));
  return {
    name: 'fan-out',
    intervalMs: deps.config.OUTBOX_POLL_MS,
    feedsOthers: true,
    step: () => fanOutLeadEvents(deps.db, turns, options),
  };
}
