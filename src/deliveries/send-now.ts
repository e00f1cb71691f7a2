import type { NewDelivery } from '../db/schema.js';
import type { Credentials } from './credentials.js';
import { deliverClaimed, leaseMs, newWorkerId, type DeliveryDeps } from './deliver.js';
import { recordAttempts, type AttemptOutcome } from './attempt-repository.js';
import { claimDueDeliveries } from './claim-repository.js';
import { healthPolicy } from './endpoint-health.js';
import { insertDeliveries } from './repository.js';

export interface SendNowResult {
  delivery_id: number;
  delivered: boolean;
  status: number | null;
  reply: string | null;
  error: string | null;
  branch: 'pending' | 'Delivered' | 'Failed';
  attempts: number;
  /** When the worker retries a retryable failure (null when finished). */
  next_attempt_at: string | null;
}

/**
 * The buttons (Send test, Push to CRM): records the delivery and makes its first attempt
 * at once, in this process, with the credentials of the connector at hand. A retryable
 * failure stays pending for the worker to retry; so does a push that the connector's cap
 * holds back. The attempt counts in the endpoint's health, but only the worker disables
 * endpoints (it logs and counts that).
 */
export async function sendNow(deps: DeliveryDeps, delivery: NewDelivery, credentials: Credentials): Promise<SendNowResult> {
  const workerId = newWorkerId();
  // Inserted and claimed in one transaction: a worker polling meanwhile never sees the
  // delivery unclaimed, so the person who pressed the button gets this attempt's answer.
  const { id, claim } = await deps.db.transaction().execute(async (trx) => {
    const [inserted] = await insertDeliveries(trx, [delivery]);
    const claim = delivery.branch === 'Failed' ? null : await claimDueDeliveries(trx, delivery.workspace_id, workerId, 1, leaseMs(deps.config), inserted);
    return { id: inserted!, claim };
  });
  const failed = { delivery_id: id, delivered: false, status: null, reply: null, attempts: 0, next_attempt_at: null };
  if (!claim) return { ...failed, error: delivery.error ?? 'failed', branch: 'Failed' };
  const {
    rows: [row],
    deferred,
  } = claim;
  if (deferred > 0) return { ...failed, error: "held back by the connector's --max-per-second cap: the worker sends it in its turn", branch: 'pending' };
  if (!row) return { ...failed, error: 'the delivery was taken by a worker', branch: 'pending' };
  const policy = healthPolicy(deps.config);
  const record = async (outcome: AttemptOutcome) => (await recordAttempts(deps.db, workerId, [outcome], policy)).recorded.length > 0;
  const outcome = await deliverClaimed(deps, record, row, credentials);
  if (!outcome) return { ...failed, error: 'the attempt could not be recorded', branch: 'pending' };
  return {
    delivery_id: id,
    delivered: outcome.branch === 'Delivered',
    status: outcome.statusCode,
    reply: outcome.reply,
    error: outcome.error,
    branch: outcome.branch,
    attempts: outcome.attempt,
    next_attempt_at: outcome.nextAttemptAt ? outcome.nextAttemptAt.toISOString() : null,
  };
}
