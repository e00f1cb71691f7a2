import { recordAudit, type Actor } from '../audit/service.js';
import type { Db, Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import type { ConnectorRow, KeyValue } from '../db/schema.js';
import { newSigningSecret } from '../deliveries/attempt.js';
import { composeConnectorDelivery, connectorProblem } from '../deliveries/compose.js';
import { connectorCredentials } from '../deliveries/credentials.js';
import type { DeliveryDeps } from '../deliveries/deliver.js';
import { droppedHeaderReason } from '../deliveries/headers.js';
import { maskKeyValues, maskSecret as mask, maskUrl } from '../deliveries/masking.js';
import { sendNow, type SendNowResult } from '../deliveries/send-now.js';
import { findEndpointStates, setEndpointCap, type EndpointState } from '../endpoints/repository.js';
import { enable } from '../endpoints/service.js';
import { deleteEndpoint } from '../deliveries/service.js';
import { loadLeads } from '../leads/read-service.js';
import { Refused } from '../refused.js';
import {
  findConnectors,
  findConnectorsAcrossWorkspaces,
  insertConnector,
  listConnectors,
  replaceSigningSecret,
  setAutoPush,
  softDeleteConnector,
  type NewConnector,
} from './repository.js';

// Webhook connectors as an operator manages them (the admin CLI): created with their own
// signing secret, shown with credentials masked, tested and pushed to at once.

/** Configured headers that will never be sent, each as a warning for the operator. */
export function unsentHeaderWarnings(headers: readonly KeyValue[]): string[] {
  return headers.flatMap(({ key }) => {
    const reason = droppedHeaderReason(key);
    return reason ? [`--header ${key}: ${reason}; it is not sent.`] : [];
  });
}

/**
 * The connector as shown to an operator: credentials masked, the signing secret only at
 * creation, its cap and its health (why and since when it is disabled, its current run of
 * failures).
 */
function presentConnector(connector: ConnectorRow, showSecret: boolean, state: EndpointState) {
  const auth = connector.auth;
  return {
    id: connector.id,
    workspace_id: connector.workspace_id,
    kind: connector.kind,
    url: maskUrl(connector.url),
    method: connector.method,
    format: connector.format,
    auth:
      auth.type === 'bearer'
        ? { type: 'bearer', token: mask(auth.token) }
        : auth.type === 'basic'
          ? { type: 'basic', username: auth.username, password: mask(auth.password) }
          : auth.type === 'header'
            ? { type: 'header', name: auth.name, value: mask(auth.value) }
            : { type: 'none' },
    mapping: connector.mapping,
    fields: connector.fields,
    headers: maskKeyValues(connector.headers),
    auto_push: connector.auto_push,
    ...state,
    ...(showSecret ? { signing_secret: connector.signing_secret } : {}),
    created_at: connector.created_at,
  };
}

const stateOf = async (db: Executor, connector: ConnectorRow) => (await findEndpointStates(db, 'connector', [connector.id], connector.workspace_id)).get(connector.id)!;

/** A new connector with its own signing secret; `maxPerSecond` caps its deliveries (null: no cap). */
export async function createConnector(db: Db, actor: Actor, connector: Omit<NewConnector, 'signing_secret'>, maxPerSecond: number | null = null) {
  return db.transaction().execute(async (trx) => {
    const created = await insertConnector(trx, { ...connector, signing_secret: newSigningSecret() });
    if (maxPerSecond !== null) await setEndpointCap(trx, { kind: 'connector', id: created.id }, maxPerSecond);
    await recordAudit(trx, {
      actor,
      workspaceId: created.workspace_id,
      action: 'connector.created',
      target: { type: 'connector', id: created.id },
      details: { auth: connector.auth.type, auto_push: connector.auto_push, max_per_second: maxPerSecond },
    });
    return { ...presentConnector(created, true, await stateOf(trx, created)), warnings: unsentHeaderWarnings(connector.headers) };
  });
}

/** A workspace's connectors (deleted ones left out), oldest first, credentials masked. */
export async function listWorkspaceConnectors(db: Executor, workspaceId: number) {
  const connectors = await listConnectors(db, workspaceId);
  const states = await findEndpointStates(
    db,
    'connector',
    connectors.map((connector) => connector.id),
    workspaceId,
  );
  return connectors.map((connector) => presentConnector(connector, false, states.get(connector.id)!));
}

/** Changes auto-push and the cap (null removes it), each when given. */
export async function updateConnector(db: Db, actor: Actor, id: number, changes: { autoPush?: boolean; maxPerSecond?: number | null }) {
  return db.transaction().execute(async (trx) => {
    const updated = changes.autoPush === undefined ? (await findConnectorsAcrossWorkspaces(trx, [id])).get(id) : await setAutoPush(trx, id, changes.autoPush);
    if (!updated || updated.deleted_at !== null) throw new Refused('not_found', `Connector ${id} does not exist.`);
    if (changes.maxPerSecond !== undefined) await setEndpointCap(trx, { kind: 'connector', id }, changes.maxPerSecond);
    await recordAudit(trx, {
      actor,
      workspaceId: updated.workspace_id,
      action: 'connector.updated',
      target: { type: 'connector', id },
      details: {
        ...(changes.autoPush === undefined ? {} : { auto_push: changes.autoPush }),
        ...(changes.maxPerSecond === undefined ? {} : { max_per_second: changes.maxPerSecond }),
      },
    });
    return presentConnector(updated, false, await stateOf(trx, updated));
  });
}

/** `connector enable`: a connector disabled for sustained failure is sent to again, its failure count reset. */
export async function enableConnector(db: Executor, actor: Actor, id: number) {
  const connector = (await findConnectorsAcrossWorkspaces(db, [id])).get(id);
  if (!connector || connector.deleted_at !== null) throw new Refused('not_found', `Connector ${id} does not exist.`);
  return enable(db, actor, { kind: 'connector', id, workspaceId: connector.workspace_id });
}

/** `connector delete`: it sends nothing more, its pending retries included (deleteEndpoint). */
export const deleteConnector = (db: Db, actor: Actor, id: number) => deleteEndpoint(db, actor, { kind: 'connector', id }, softDeleteConnector);

/**
 * A new signing secret. For `overlapHours` the previous one signs too (both signatures in
 * webhook-signature), so receivers can switch to the new secret without rejecting anything.
 */
export async function rotateSigningSecret(db: Executor, actor: Actor, id: number, overlapHours: number, now = new Date()) {
  const overlapEnds = new Date(now.getTime() + overlapHours * 60 * 60 * 1000);
  return inTransaction(db, async (trx) => {
    const rotated = await replaceSigningSecret(trx, id, newSigningSecret(), overlapEnds);
    if (!rotated) throw new Refused('not_found', `Connector ${id} does not exist.`);
    await recordAudit(trx, {
      actor,
      workspaceId: rotated.workspace_id,
      action: 'connector.secret_rotated',
      target: { type: 'connector', id },
      details: { overlap_hours: overlapHours, previous_secret_signs_until: overlapEnds.toISOString() },
    });
    return { id: rotated.id, signing_secret: rotated.signing_secret, previous_secret_signs_until: overlapEnds.toISOString() };
  });
}

async function requireUsableConnector(db: Executor, id: number, workspaceId: number): Promise<ConnectorRow> {
  const connector = (await findConnectors(db, [id], workspaceId)).get(id);
  if (!connector) throw new Refused('not_found', `Connector ${id} does not exist.`);
  const problem = connectorProblem(connector, connector.workspace_id, id);
  if (problem) throw new Refused('connector_unusable', problem);
  return connector;
}

/** Send test: a sample lead to the connector, now, never retried; also while the connector is disabled or capped. */
export async function testConnector(deps: DeliveryDeps, id: number, workspaceId: number) {
  const connector = await requireUsableConnector(deps.db, id, workspaceId);
  const delivery = composeConnectorDelivery(
    { workspaceId: connector.workspace_id, trigger: 'test', maxAttempts: 1 },
    { connectorId: connector.id, connector, event: 'test', lead: null },
  );
  const { delivered, status, reply, error, delivery_id } = await sendNow(deps, delivery, connectorCredentials(connector));
  return { delivered, status, reply, error, delivery_id };
}

/** Push to CRM: the lead to the connector, first attempt now; a retryable failure is retried by the worker. */
export async function pushLead(deps: DeliveryDeps, id: number, leadId: number, workspaceId: number): Promise<SendNowResult> {
  const connector = await requireUsableConnector(deps.db, id, workspaceId);
  const lead = (await loadLeads(deps.db, [{ id: leadId, workspace_id: connector.workspace_id }])).get(leadId);
  if (!lead) throw new Refused('not_found', `Lead ${leadId} does not exist in the connector's workspace.`);
  const delivery = composeConnectorDelivery(
    { workspaceId: connector.workspace_id, trigger: 'push', maxAttempts: deps.config.WEBHOOK_MAX_ATTEMPTS },
    { connectorId: connector.id, connector, event: 'lead', lead },
  );
  return sendNow(deps, delivery, connectorCredentials(connector));
}
