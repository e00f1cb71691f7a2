import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { isUnavailable, type OutageLog } from '../db/availability.js';
import type { Db } from '../db/connect.js';
import { attemptDelivery } from './attempt.js';
import type { Credentials } from './credentials.js';
import type { AttemptOutcome } from './attempt-repository.js';
import type { ClaimedDelivery } from './claim-repository.js';
import { inSpan, storedContext } from '../tracing/spans.js';

/** What delivering needs from the process: its configuration, database and logger. */
export interface DeliveryDeps {
  config: Config;
  db: Db;
  logger: Logger;
}

/** Names the claims of one worker (or one send-now) on deliveries and outbox events. */
export const newWorkerId = () => `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

/** A claim outlives the longest attempt by a wide margin, so only a dead worker loses one. */
export const leaseMs = (config: Config) => config.WEBHOOK_TIMEOUT_MS * 2 + 5000;

/** Records an attempt; resolves true, or false when its worker no longer held the claim. */
export type RecordAttempt = (outcome: AttemptOutcome) => Promise<boolean>;

/**
 * One attempt of a claimed delivery, at its slot when its endpoint is capped, recorded; never
 * throws (a failure is logged and the lease expires). While the database is away, `outage`
 * reports all failures as one.
 */
export async function deliverClaimed(
  deps: DeliveryDeps,
  record: RecordAttempt,
  row: ClaimedDelivery,
  credentials: Credentials | undefined,
  outage?: OutageLog,
): Promise<AttemptOutcome | null> {
  // The claim's lease runs from the slot (src/deliveries/claim-repository.ts).
  if (row.wait_ms > 0) await sleep(row.wait_ms);
  const leaseEndsAt = Date.now() + leaseMs(deps.config);
  try {
    const outcome = await attemptInSpan(row, credentials, deps.config);
    // The worker (which reports outages) waits out a short one; a send-now caller is told at once.
    const recorded = outage ? await recordWithinLease(record, outcome, leaseEndsAt, outage) : await record(outcome);
    if (!recorded) deps.logger.warn({ deliveryId: row.id }, 'delivery claim was lost before the attempt was recorded');
    deps.logger.debug({ deliveryId: row.id, branch: outcome.branch, status: outcome.statusCode, attempt: outcome.attempt }, 'delivery attempt');
    return outcome;
  } catch (error) {
    if (outage && isUnavailable(error)) outage.failed(error, { deliveryId: row.id });
    else deps.logger.error({ err: error, deliveryId: row.id }, 'delivery attempt could not be recorded; it is retried when its lease expires');
    return null;
  }
}

/**
 * The attempt in a span of the trace of the request that wrote its event (of the caller, for a
 * send-now), so its HTTP request carries that trace's `traceparent` to the receiver; each retry
 * is another such span of the same trace.
 */
function attemptInSpan(row: ClaimedDelivery, credentials: Credentials | undefined, config: Config): Promise<AttemptOutcome> {
  const attributes = {
    'lead_intake.delivery.id': row.id,
    'lead_intake.delivery.attempt': row.attempts + 1,
    'lead_intake.delivery.sender': row.sender,
    'lead_intake.delivery.event': row.event,
  };
  const parent = row.trace_context ? storedContext(row.trace_context) : undefined;
  return inSpan(`webhook ${row.event} delivery`, { parent, attributes }, async (span) => {
    const outcome = await attemptDelivery(row, credentials, config);
    span?.setAttribute('lead_intake.delivery.branch', outcome.branch);
    return span ? { ...outcome, traceId: span.spanContext().traceId } : outcome;
  });
}

const RECORD_RETRY_MS = 500;

/**
 * The receiver has the webhook; only its record keeps the delivery from being sent again
 * when the claim's lease expires. While the database is away (a restart, a failover) the
 * record is retried until the lease is nearly over, so an outage shorter than the lease
 * sends nothing twice.
 */
async function recordWithinLease(record: RecordAttempt, outcome: AttemptOutcome, leaseEndsAt: number, outage: OutageLog): Promise<boolean> {
  for (;;) {
    try {
      return await record(outcome);
    } catch (error) {
      if (!isUnavailable(error) || Date.now() + RECORD_RETRY_MS >= leaseEndsAt) throw error;
      outage.failed(error);
      await sleep(RECORD_RETRY_MS);
    }
  }
}
