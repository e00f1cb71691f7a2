import type { AttemptOutcome } from '../../deliveries/attempt-repository.js';
import { claimDueDeliveries, dueDeliveryWorkspaces, MAX_CLAIM } from '../../deliveries/claim-repository.js';
import { deliverClaimed } from '../../deliveries/deliver.js';
import { healthPolicy } from '../../deliveries/endpoint-health.js';
import type { PeriodicTask } from '../scheduler.js';
import type { JobDeps } from '../worker-deps.js';
import { WorkspaceTurns } from '../workspace-turns.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { countRecordedAttempt } from './counts.js';
import { disableFailingEndpoints } from './disable-endpoints.js';
import { loadCredentials } from './load-credentials.js';

/**
 * Due deliveries, retries included: a step claims a batch once the window has room and starts
 * delivering it. When due deliveries were there but none could be claimed (another worker held
 * them), it waits for one of its own in flight to end (or the poll interval) and tries again;
 * when none were due, the step found nothing, and the task sleeps until the fan-out writes more
 * or the interval ends.
 */
export function deliveriesTask(deps: JobDeps): PeriodicTask {
  const job = new DeliveryJob(deps);
  return {
    name: 'delivery',
    intervalMs: deps.config.OUTBOX_POLL_MS,
    // Every completed step has asked the database, so a step that returns proves it reachable.
    async step(pacing) {
      await job.room();
      if (pacing.isStopped) return 0;
      const { claimed, dueWorkspaces } = await job.claimAndStart();
      if (claimed === 0 && dueWorkspaces > 0 && job.inFlightCount > 0) {
        await Promise.race([job.oneFinished(), pacing.sleep(deps.config.OUTBOX_POLL_MS)]);
        return 1;
      }
      return claimed;
    },
    finish: () => job.allFinished(),
  };
}

/** HTTP exchanges in flight at once per worker process. */
const DELIVERY_CONCURRENCY = 64;
/**
 * Deliveries claimed and not yet recorded, at most: the window above frees a slot once the
 * exchange is over, so recording (batched, a round trip behind) never holds the next sends back,
 * and this bounds what waits for its record when the database is slow.
 */
const UNRECORDED_LIMIT = DELIVERY_CONCURRENCY * 4;

/**
 * The worker's deliveries: claims due ones (retries included) while fewer than
 * DELIVERY_CONCURRENCY exchanges are in flight, and delivers each; attempts are recorded in batches.
 */
class DeliveryJob {
  /** One per exchange in flight: settles when its attempt is over (before it is recorded). */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** One per delivery claimed and not yet recorded. */
  private readonly unfinished = new Set<Promise<unknown>>();
  private readonly recorder: AttemptRecorder;
  private readonly turns: WorkspaceTurns;

  constructor(private readonly deps: JobDeps) {
    this.turns = new WorkspaceTurns((after, limit) => dueDeliveryWorkspaces(deps.db, after, limit));
    this.recorder = new AttemptRecorder(deps.db, deps.workerId, {
      policy: healthPolicy(deps.config),
      failing: (endpoints) => disableFailingEndpoints(deps, endpoints),
    });
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** Resolves once a quarter of the window is free, so claims come in batches rather than one by one. */
  async room(): Promise<void> {
    while (DELIVERY_CONCURRENCY - this.inFlight.size < DELIVERY_CONCURRENCY / 4) await Promise.race(this.inFlight);
    while (this.unfinished.size >= UNRECORDED_LIMIT) await Promise.race(this.unfinished);
  }

  /**
   * Claims what fits in the window and starts delivering it. Returns how many due deliveries
   * it dealt with (`claimed`): claimed, or rescheduled to their capped endpoint's next free
   * slot; either way the due queue moved, so the loop goes on at once to what lies behind them.
   * `dueWorkspaces`: how many workspaces had due deliveries when the step began.
   */
  async claimAndStart(): Promise<{ claimed: number; dueWorkspaces: number }> {
    let dealt = 0;
    const workspaces = await this.turns.next();
    for (const [index, workspaceId] of workspaces.entries()) {
      const room = Math.min(MAX_CLAIM, DELIVERY_CONCURRENCY - this.inFlight.size);
      if (room <= 0) break;
      // The room is shared by the workspaces still to serve, so each gets its part this step.
      dealt += await this.claimWorkspace(workspaceId, Math.max(1, Math.floor(room / (workspaces.length - index))));
      this.turns.served(workspaceId);
    }
    return { claimed: dealt, dueWorkspaces: workspaces.length };
  }

  private async claimWorkspace(workspaceId: number, free: number): Promise<number> {
    const { rows, deferred } = await claimDueDeliveries(this.deps.db, workspaceId, this.deps.workerId, free, this.deps.leaseMs);
    this.deps.metrics.worker.deliveriesDeferred(deferred);
    // Should this fail (the database went away), the claims expire with their lease.
    const credentials = await loadCredentials(this.deps.db, workspaceId, rows);
    for (const row of rows) {
      let exchanged!: () => void;
      const exchange: Promise<unknown> = new Promise<void>((resolve) => (exchanged = resolve)).then(() => this.inFlight.delete(exchange));
      this.inFlight.add(exchange);
      const record = async (outcome: AttemptOutcome) => {
        exchanged();
        const recorded = await this.recorder.record(outcome);
        // Only the worker that still held the claim counts the attempt: a lost claim's is another worker's to count.
        if (recorded) countRecordedAttempt(this.deps.metrics.worker, row.sender, outcome);
        return recorded;
      };
      const running: Promise<unknown> = deliverClaimed(this.deps, record, row, credentials.get(row.id), this.deps.outage).finally(() => {
        exchanged();
        this.unfinished.delete(running);
      });
      this.unfinished.add(running);
    }
    return rows.length + deferred;
  }

  /** Resolves when one delivery in flight finishes. */
  oneFinished(): Promise<unknown> {
    return Promise.race(this.inFlight);
  }

  /** Resolves when every delivery claimed has been sent and recorded. */
  async allFinished(): Promise<void> {
    await Promise.allSettled([...this.unfinished]);
  }
}
