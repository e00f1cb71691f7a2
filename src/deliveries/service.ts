import { recordAudit, type Actor } from '../audit/service.js';
import type { Db, Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import type { DeliveryRow } from '../db/schema.js';
import { authHeaderName, configuredFieldKeys, findEndpointStates, liveEndpointOf, type EndpointRef } from '../endpoints/repository.js';
import { Refused } from '../refused.js';
import { requestUrl } from './attempt.js';
import { bodyShownToReader, maskHeaderRows, maskSecret, maskUrl, urlForReader } from './masking.js';
import { methodCarriesBody } from './payload.js';
import { cancelPendingDeliveries, findDelivery, listDeliveryAttempts, type DeliveryOwner } from './repository.js';
import { recoverFailedDeliveries, startNewSeries, type RecoveryWindow } from './series-repository.js';

// Deliveries as an operator inspects, replays and recovers them (one workspace's: the CLI finds
// the workspace of the id it is given first), and what deleting their endpoint does to them.
// What this needs of connectors and workflows it reads through the endpoint seam
// (src/endpoints/repository.ts), never from their own features, which build on this one.

/** The URL called: for GET and DELETE with the payload as its query string; as stored when it never was a URL. */
function calledUrl(row: DeliveryRow): string {
  try {
    return requestUrl(row).toString();
  } catch {
    return row.url;
  }
}

/**
 * The request as every attempt sends it, credentials masked: every header whose name looks
 * like a credential (authorization, token, secret, key, password, ...) or is the connector's
 * authentication header, and such query parameters. The signature headers are computed per
 * attempt; `webhook-id` is the same on all of them.
 */
async function sentRequest(db: Executor, row: DeliveryRow) {
  const authHeader = row.connector_id === null ? undefined : await authHeaderName(db, row.workspace_id, row.connector_id);
  const headers = maskHeaderRows(row.headers, authHeader === undefined ? [] : [authHeader]);
  const carriesBody = methodCarriesBody(row.method);
  return {
    method: row.method,
    url: maskUrl(calledUrl(row)),
    headers: Object.fromEntries([...headers.map(({ name, value }) => [name, value]), ['webhook-id', row.message_id]]),
    body: carriesBody ? row.body : null,
  };
}

/** One delivery: where it stands, the request as sent, and every attempt of every series. */
export async function showDelivery(db: Executor, id: number, workspaceId: number) {
  const row = await findDelivery(db, id, workspaceId);
  if (!row) throw new Refused('not_found', `Delivery ${id} does not exist.`);
  const attempts = await listDeliveryAttempts(db, row.workspace_id, id);
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    event: row.event,
    sender: row.sender,
    trigger: row.trigger,
    lead_id: row.lead_id,
    connector_id: row.connector_id,
    workflow_id: row.workflow_id,
    message_id: row.message_id,
    branch: row.branch,
    series: row.series,
    attempts: row.attempts,
    rate_limited: row.rate_limited,
    max_attempts: row.max_attempts,
    status_code: row.status_code,
    error: row.error,
    reply: row.reply,
    next_attempt_at: row.branch === 'pending' ? row.next_attempt_at : null,
    created_at: row.created_at,
    finished_at: row.finished_at,
    request: await sentRequest(db, row),
    attempt_log: attempts.map((attempt) => ({
      series: attempt.series,
      attempt: attempt.attempt,
      at: attempt.created_at,
      duration_ms: attempt.duration_ms,
      status_code: attempt.status_code,
      error: attempt.error,
      reply: attempt.reply,
      trace_id: attempt.trace_id,
    })),
  };
}

/**
 * Sends a finished delivery again: a new series of attempts under the same `webhook-id`,
 * made by the worker (due at once) and recorded like any other, retries included.
 */
export async function replayDelivery(db: Executor, actor: Actor, id: number, workspaceId: number) {
  const replayed = await inTransaction(db, async (trx) => {
    const started = await startNewSeries(trx, id, workspaceId);
    if (!started) return undefined;
    const { workspace_id, ...shown } = started;
    await recordAudit(trx, { actor, workspaceId: workspace_id, action: 'delivery.replayed', target: { type: 'delivery', id }, details: { series: shown.series } });
    return shown;
  });
  if (replayed) return replayed;
  const row = await findDelivery(db, id, workspaceId);
  if (!row) throw new Refused('not_found', `Delivery ${id} does not exist.`);
  if (row.branch === 'pending') throw new Refused('delivery_pending', `Delivery ${id} is still pending: the worker attempts it (next at ${row.next_attempt_at}).`);
  throw new Refused('not_replayable', `Delivery ${id} was never sent: ${row.error ?? 'a configuration error'}. Fix the workflow or connector; a replay would send nothing.`);
}

/** Where a recovery's deliveries go: the connector, or the workflow's block (its Custom URL, or the connector it sends to). */
async function recoveryTarget(db: Executor, endpoint: DeliveryOwner, workspaceId: number): Promise<EndpointRef> {
  const owner: EndpointRef = 'connectorId' in endpoint ? { kind: 'connector', id: endpoint.connectorId } : { kind: 'workflow', id: endpoint.workflowId };
  const target = await liveEndpointOf(db, workspaceId, owner);
  if (!target) throw new Refused('not_found', `${owner.kind === 'connector' ? 'Connector' : 'Workflow'} ${owner.id} does not exist.`);
  return target;
}

/**
 * Recovery after an outage: sends again, as replayDelivery does, every delivery of a connector
 * or of a workflow that ended `Failed` in the window and was not recovered before; a second
 * run sends nothing more. Refused for an unknown or deleted connector or workflow,
 * and while the endpoint is disabled: every delivery would fail again at once and, being
 * recovered, never be recovered again.
 */
export async function recoverDeliveries(db: Executor, actor: Actor, endpoint: DeliveryOwner, window: RecoveryWindow, workspaceId: number) {
  const target = await recoveryTarget(db, endpoint, workspaceId);
  const state = (await findEndpointStates(db, target.kind, [target.id], workspaceId)).get(target.id)!;
  if (state.disabled_at !== null) {
    throw new Refused(
      'endpoint_disabled',
      `${target.kind === 'connector' ? 'Connector' : 'Workflow'} ${target.id} is disabled since ${state.disabled_at} ` +
        `(${state.disabled_reason}). Turn it back on first (\`${target.kind} enable --id ${target.id}\`), then recover.`,
    );
  }
  return inTransaction(db, async (trx) => {
    const recovered = await recoverFailedDeliveries(trx, endpoint, window, workspaceId);
    const [type, id] = 'connectorId' in endpoint ? (['connector', endpoint.connectorId] as const) : (['workflow', endpoint.workflowId] as const);
    await recordAudit(trx, {
      actor,
      workspaceId,
      action: 'delivery.recovered',
      target: { type, id },
      details: { since: window.since, until: window.until ?? null, recovered: recovered.recovered, skipped: recovered.skipped },
    });
    return recovered;
  });
}

/**
 * Deletes a connector, or a workflow (whatever its block sends to), so that it sends nothing
 * more: in one transaction it is marked deleted by `markDeleted`, its feature's own statement
 * (no fan-out, auto-push, push, test, recovery or listing any more), and every pending delivery
 * of it, retries included, is finished `Failed` without another attempt. A delivery of it
 * composed by a fan-out that read it just before the delete is refused by the worker without a
 * call (src/worker/deliveries/load-credentials.ts); an attempt already on the wire when the
 * delete commits completes, and is the last.
 */
export async function deleteEndpoint(db: Db, actor: Actor, endpoint: EndpointRef, markDeleted: (trx: Executor, id: number) => Promise<{ workspace_id: number } | undefined>) {
  const name = endpoint.kind === 'connector' ? 'Connector' : 'Workflow';
  return db.transaction().execute(async (trx) => {
    const deleted = await markDeleted(trx, endpoint.id);
    if (!deleted) throw new Refused('not_found', `${name} ${endpoint.id} does not exist.`);
    const owner = endpoint.kind === 'connector' ? { connectorId: endpoint.id } : { workflowId: endpoint.id };
    const cancelled = await cancelPendingDeliveries(trx, owner, `cancelled: ${name.toLowerCase()} ${endpoint.id} was deleted, so nothing more is sent`);
    await recordAudit(trx, {
      actor,
      workspaceId: deleted.workspace_id,
      action: endpoint.kind === 'connector' ? 'connector.deleted' : 'workflow.deleted',
      target: { type: endpoint.kind, id: endpoint.id },
      details: { cancelled_deliveries: cancelled },
    });
    return { id: endpoint.id, deleted: true, cancelled_deliveries: cancelled };
  });
}

/** Headers the service itself sets: nothing a workspace configured, so nothing of theirs to hide. */
const SERVICE_HEADERS = new Set(['user-agent', 'content-type', 'webhook-id']);

/**
 * A delivery as a member (who reads but cannot change) is shown it, under the rule of the
 * Connectors and Workflows pages (shownToReader): the URL's origin only, every configured
 * header value masked, and in the body the values of the connector's constant fields and the
 * workflow block's fields masked (fields as they are configured now, read through the endpoint
 * seam). The lead's data in the body stays: members may read leads.
 */
export async function deliveryShownToReader(db: Executor, delivery: Awaited<ReturnType<typeof showDelivery>>): Promise<Awaited<ReturnType<typeof showDelivery>>> {
  const keys = await configuredFieldKeys(db, delivery.workspace_id, { connectorId: delivery.connector_id, workflowId: delivery.workflow_id });
  const { request } = delivery;
  const contentType = Object.entries(request.headers).find(([name]) => name.toLowerCase() === 'content-type')?.[1];
  return {
    ...delivery,
    request: {
      ...request,
      url: urlForReader(request.url),
      headers: Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, SERVICE_HEADERS.has(name.toLowerCase()) ? value : maskSecret(String(value))])),
      body: bodyShownToReader(request.body, typeof contentType === 'string' ? contentType : undefined, keys),
    },
  };
}
