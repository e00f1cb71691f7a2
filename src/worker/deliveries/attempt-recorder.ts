import type { Db } from '../../db/connect.js';
import { recordAttempts, type AttemptOutcome, type FailingEndpoint } from '../../deliveries/attempt-repository.js';
import type { HealthPolicy } from '../../endpoints/repository.js';

/** How long the first outcome of a batch waits for others to share its statement. */
export const RECORD_GATHER_MS = 50;

/** What recording does about endpoint health: the rule, and what to do with endpoints that meet it. */
export interface HealthWatch {
  policy: HealthPolicy;
  failing(endpoints: readonly FailingEndpoint[]): Promise<void>;
}

/**
 * Records attempts of one worker in batches: outcomes finishing within `delayMs` of the first
 * one waiting share one statement (at most `maxBatch`), so recording costs a fraction of a
 * statement each. The window is free again once an exchange ends (src/worker/deliveries/job.ts),
 * so waiting here delays only the record, never the next send; under sustained load a longer
 * wait means fewer, fuller statements, the worker's largest share of the database.
 */
export class AttemptRecorder {
  private pending: Array<{ outcome: AttemptOutcome; resolve: (recorded: boolean) => void; reject: (error: unknown) => void }> = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    readonly workerId: string,
    private readonly health: HealthWatch,
    private readonly maxBatch = 64,
    private readonly delayMs = RECORD_GATHER_MS,
  ) {}

  /** Resolves once recorded: true, or false when this worker no longer held the claim. */
  record(outcome: AttemptOutcome): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.pending.push({ outcome, resolve, reject });
      if (this.pending.length >= this.maxBatch) void this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), this.delayMs);
    });
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending.splice(0);
    if (batch.length === 0) return;
    try {
      const { recorded, failing } = await recordAttempts(
        this.db,
        this.workerId,
        batch.map((entry) => entry.outcome),
        this.health.policy,
      );
      const ids = new Set(recorded);
      for (const entry of batch) entry.resolve(ids.has(entry.outcome.deliveryId));
      if (failing.length > 0) await this.health.failing(failing);
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
