import type { Db } from '../db/connect.js';
import { recordAttempts, type AttemptOutcome } from '../deliveries/attempt-repository.js';

/**
 * Records attempts of one worker in batches: outcomes finishing within a few milliseconds
 * of each other share one statement, so recording costs a fraction of a round trip each.
 */
export class AttemptRecorder {
  private pending: Array<{ outcome: AttemptOutcome; resolve: (recorded: boolean) => void; reject: (error: unknown) => void }> = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly db: Db, readonly workerId: string, private readonly maxBatch = 64, private readonly delayMs = 5) {}

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
      const recorded = new Set(await recordAttempts(this.db, this.workerId, batch.map((entry) => entry.outcome)));
      for (const entry of batch) entry.resolve(recorded.has(entry.outcome.deliveryId));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
