import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Db } from '../db/connect.js';
import type { DeliveryRow } from '../db/schema.js';
import { attemptDelivery } from './attempt.js';
import { claimDueDeliveries, recordAttempts, releaseDeliveryClaims, type AttemptOutcome } from './delivery-repository.js';
import { fanOutLeadEvents } from './fan-out.js';
import { releaseAnalysisClaims, runWebsiteAnalyses } from './website-analysis.js';

export interface OutboundDeps {
  config: Config;
  db: Db;
  logger: Logger;
}

export interface RunningWorker {
  /** Stops claiming, finishes in-flight deliveries and analyses, releases claims, and resolves. */
  stop(): Promise<void>;
}

const FAN_OUT_BATCH = 500;
const DELIVERY_CONCURRENCY = 64;
const ANALYSIS_CONCURRENCY = 4;
const HOUSEKEEPING_EVERY_MS = 10 * 60 * 1000;

export const newWorkerId = () => `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

/** A claim outlives the longest attempt by a wide margin, so only a dead worker loses one. */
export const leaseMs = (config: Config) => config.WEBHOOK_TIMEOUT_MS * 2 + 5000;

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

/** One attempt of a claimed delivery, recorded; never throws (a failure is logged and the lease expires). */
export async function deliverClaimed(deps: OutboundDeps, recorder: AttemptRecorder, row: DeliveryRow): Promise<AttemptOutcome | null> {
  try {
    const outcome = await attemptDelivery(row, deps.config);
    const recorded = await recorder.record(outcome);
    if (!recorded) deps.logger.warn({ deliveryId: row.id }, 'delivery claim was lost before the attempt was recorded');
    deps.logger.debug({ deliveryId: row.id, branch: outcome.branch, status: outcome.statusCode, attempt: outcome.attempt }, 'delivery attempt');
    return outcome;
  } catch (error) {
    deps.logger.error({ err: error, deliveryId: row.id }, 'delivery attempt could not be recorded');
    return null;
  }
}

/** Deletes what has outlived its purpose: idempotency answers past 24 h, old processed events. */
export async function housekeeping(db: Db): Promise<void> {
  await db.deleteFrom('idempotency_records').where(sql<boolean>`created_at < now() - interval '24 hours'`).execute();
  await db.deleteFrom('outbox').where(sql<boolean>`processed_at < now() - interval '7 days'`).execute();
}

/**
 * Drains everything due now (events, analyses, deliveries, including retries that are due)
 * until nothing is left: for tests and one-off runs.
 */
export async function processAll(deps: OutboundDeps): Promise<void> {
  const workerId = newWorkerId();
  const recorder = new AttemptRecorder(deps.db, workerId);
  const lease = leaseMs(deps.config);
  for (;;) {
    let progress = 0;
    while ((await fanOutLeadEvents(deps.db, { limit: FAN_OUT_BATCH, maxAttempts: deps.config.WEBHOOK_MAX_ATTEMPTS })) > 0) progress += 1;
    progress += await runWebsiteAnalyses(deps.db, deps.config, workerId, { limit: ANALYSIS_CONCURRENCY, leaseMs: lease });
    const rows = await claimDueDeliveries(deps.db, workerId, DELIVERY_CONCURRENCY, lease);
    await Promise.all(rows.map((row) => deliverClaimed(deps, recorder, row)));
    progress += rows.length;
    if (progress === 0) return;
  }
}

/**
 * The dispatcher: three loops sharing one worker id (fan-out of outbox events, website
 * analyses, deliveries), each polling every OUTBOX_POLL_MS when idle and going again at
 * once while there is work. Deliveries run up to DELIVERY_CONCURRENCY at a time.
 */
export function startWorker(deps: OutboundDeps): RunningWorker {
  const workerId = newWorkerId();
  const recorder = new AttemptRecorder(deps.db, workerId);
  const lease = leaseMs(deps.config);
  const log = deps.logger.child({ worker: workerId });
  let stopping = false;
  const sleepers = new Set<() => void>();
  const sleep = (ms: number) => new Promise<void>((resolve) => {
    if (stopping) return resolve();
    const wake = () => { clearTimeout(timer); sleepers.delete(wake); resolve(); };
    const timer = setTimeout(wake, ms);
    sleepers.add(wake);
  });
  const wakeAll = () => { for (const wake of [...sleepers]) wake(); };

  async function loop(name: string, step: () => Promise<number>): Promise<void> {
    while (!stopping) {
      let worked = 0;
      try {
        worked = await step();
      } catch (error) {
        log.error({ err: error, loop: name }, 'worker step failed; retrying after the poll interval');
      }
      if (worked === 0) await sleep(deps.config.OUTBOX_POLL_MS);
    }
  }

  const inFlight = new Set<Promise<unknown>>();
  async function deliveryStep(): Promise<number> {
    const free = DELIVERY_CONCURRENCY - inFlight.size;
    if (free < DELIVERY_CONCURRENCY / 4) {
      await Promise.race(inFlight);
      return 1;
    }
    const rows = await claimDueDeliveries(deps.db, workerId, free, lease);
    for (const row of rows) {
      const running: Promise<unknown> = deliverClaimed(deps, recorder, row).finally(() => inFlight.delete(running));
      inFlight.add(running);
    }
    if (rows.length === 0 && inFlight.size > 0) {
      await Promise.race([Promise.race(inFlight), sleep(deps.config.OUTBOX_POLL_MS)]);
      return 1;
    }
    return rows.length;
  }

  let lastHousekeeping = 0;
  const loops = [
    loop('fan-out', async () => {
      const events = await fanOutLeadEvents(deps.db, { limit: FAN_OUT_BATCH, maxAttempts: deps.config.WEBHOOK_MAX_ATTEMPTS });
      if (events > 0) wakeAll();
      if (Date.now() - lastHousekeeping > HOUSEKEEPING_EVERY_MS) {
        lastHousekeeping = Date.now();
        await housekeeping(deps.db);
      }
      return events;
    }),
    loop('analysis', () => runWebsiteAnalyses(deps.db, deps.config, workerId, { limit: ANALYSIS_CONCURRENCY, leaseMs: lease })),
    loop('delivery', deliveryStep),
  ];

  return {
    async stop() {
      stopping = true;
      wakeAll();
      await Promise.all(loops);
      await Promise.allSettled([...inFlight]);
      await Promise.all([releaseDeliveryClaims(deps.db, workerId), releaseAnalysisClaims(deps.db, workerId)])
        .catch((error: unknown) => log.error({ err: error }, 'could not release claims; they expire with their lease'));
    },
  };
}
