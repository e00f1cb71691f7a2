import { DeliveryJob } from '../delivery-job.js';
import type { PeriodicTask } from '../scheduler.js';
import type { JobDeps } from '../worker-deps.js';

/**
 * Due deliveries, retries included: a step claims a batch once the window has room and starts
 * delivering it; with nothing to claim it waits for one in flight (or the poll interval).
 */
export function deliveriesTask(deps: JobDeps): PeriodicTask {
  const job = new DeliveryJob(deps, deps.workerId, deps.leaseMs, deps.outage);
  return {
    name: 'delivery',
    intervalMs: deps.config.OUTBOX_POLL_MS,
    // Every completed step has asked the database, so a step that returns proves it reachable.
    async step(pacing) {
      await job.room();
      if (pacing.isStopped) return 0;
      const claimed = await job.claimAndStart();
      if (claimed === 0 && job.inFlightCount > 0) {
        await Promise.race([job.oneFinished(), pacing.sleep(deps.config.OUTBOX_POLL_MS)]);
        return 1;
      }
      return claimed;
    },
    finish: () => job.allFinished(),
  };
}
