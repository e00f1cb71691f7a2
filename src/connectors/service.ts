import type { Executor } from '../db/connect.js';
import type { ConnectorRow, KeyValue } from '../db/schema.js';
import { newSigningSecret } from '../deliveries/attempt.js';
import { composeConnectorDelivery, connectorProblem } from '../deliveries/compose.js';
import { connectorCredentials } from '../deliveries/credentials.js';
import type { DeliveryDeps } from '../deliveries/deliver.js';
import { droppedHeaderReason } from '../deliveries/headers.js';
import { maskKeyValues, maskSecret as mask, maskUrl } from '../deliveries/masking.js';
import { sendNow, type SendNowResult } from '../deliveries/send-now.js';
import { loadLeads } from '../leads/read-service.js';
import { Refused } from '../refused.js';
import { findConnectors, insertConnector, listConnectors, replaceSigningSecret, setAutoPush, softDeleteConnector, type NewConnector } from './repository.js';

// Webhook connectors as an operator manages them (the admin CLI): created with their own
// signing secret, shown with credentials masked, tested and pushed to at once.

/** Configured headers that will never be sent, each as a warning for the operator. */
export function unsentHeaderWarnings(headers: readonly KeyValue[]): string[] {
  return headers.flatMap(({ key }) => {
    const reason = droppedHeaderReason(key);
    return reason ? [`--header ${key}: ${reason}; it is not sent.`] : [];
  });
}

/** The connector as shown to an operator: credentials masked, the signing secret only at creation. */
function presentConnector(connector: ConnectorRow, showSecret: boolean) {
  const auth = connector.auth;
  return {
    id: connector.id,
    workspace_id: connector.workspace_id,
    kind: connector.kind,
    url: maskUrl(connector.url),
    method: connector.method,
    format: connector.format,
    auth: auth.type === 'bearer' ? { type: 'bearer', token: mask(auth.token) }
      : auth.type === 'basic' ? { type: 'basic', username: auth.username, password: mask(auth.password) }
        : auth.type === 'header' ? { type: 'header', name: auth.name, value: mask(auth.value) }
          : { type: 'none' },
    mapping: connector.mapping,
    fields: connector.fields,
    headers: maskKeyValues(connector.headers),
    auto_push: connector.auto_push,
    ...(showSecret ? { signing_secret: connector.signing_secret } : {}),
    created_at: connector.created_at,
  };
}

export async function createConnector(db: Executor, connector: Omit<NewConnector, 'signing_secret'>) {
  const created = await insertConnector(db, { ...connector, signing_secret: newSigningSecret() });
  return { ...presentConnector(created, true), warnings: unsentHeaderWarnings(connector.headers) };
}

/** A workspace's connectors (deleted ones left out), oldest first, credentials masked. */
export async function listWorkspaceConnectors(db: Executor, workspaceId: number) {
  return (await listConnectors(db, workspaceId)).map((connector) => presentConnector(connector, false));
}

export async function updateAutoPush(db: Executor, id: number, autoPush: boolean) {
  const updated = await setAutoPush(db, id, autoPush);
  if (!updated) throw new Refused('not_found', `Connector ${id} does not exist.`);
  return presentConnector(updated, false);
}

export async function deleteConnector(db: Executor, id: number) {
  const deleted = await softDeleteConnector(db, id);
  if (!deleted) throw new Refused('not_found', `Connector ${id} does not exist.`);
  return { id: deleted.id, deleted: true };
}

/**
 * A new signing secret. For `overlapHours` the previous one signs too (both signatures in
 * webhook-signature), so receivers can switch to the new secret without rejecting anything.
 */
export async function rotateSigningSecret(db: Executor, id: number, overlapHours: number, now = new Date()) {
  const overlapEnds = new Date(now.getTime() + overlapHours * 60 * 60 * 1000);
  const rotated = await replaceSigningSecret(db, id, newSigningSecret(), overlapEnds);
  if (!rotated) throw new Refused('not_found', `Connector ${id} does not exist.`);
  return { id: rotated.id, signing_secret: rotated.signing_secret, previous_secret_signs_until: overlapEnds.toISOString() };
}

async function requireUsableConnector(db: Executor, id: number): Promise<ConnectorRow> {
  const connector = (await findConnectors(db, [id])).get(id);
  if (!connector) throw new Refused('not_found', `Connector ${id} does not exist.`);
  const problem = connectorProblem(connector, connector.workspace_id, id);
  if (problem) throw new Refused('connector_unusable', problem);
  return connector;
}

/** Send test: a sample lead to the connector, now, never retried. */
export async function testConnector(deps: DeliveryDeps, id: number) {
  const connector = await requireUsableConnector(deps.db, id);
  const delivery = composeConnectorDelivery(
    { workspaceId: connector.workspace_id, trigger: 'test', maxAttempts: 1 },
    { connectorId: connector.id, connector, event: 'test', lead: null },
  );
  const { delivered, status, reply, error, delivery_id } = await sendNow(deps, delivery, connectorCredentials(connector));
  return { delivered, status, reply, error, delivery_id };
}

/** Push to CRM: the lead to the connector, first attempt now; a retryable failure is retried by the worker. */
export async function pushLead(deps: DeliveryDeps, id: number, leadId: number): Promise<SendNowResult> {
  const connector = await requireUsableConnector(deps.db, id);
  const lead = (await loadLeads(deps.db, [{ id: leadId, workspace_id: connector.workspace_id }])).get(leadId);
  if (!lead) throw new Refused('not_found', `Lead ${leadId} does not exist in the connector's workspace.`);
  const delivery = composeConnectorDelivery(
    { workspaceId: connector.workspace_id, trigger: 'push', maxAttempts: deps.config.WEBHOOK_MAX_ATTEMPTS },
    { connectorId: connector.id, connector, event: 'lead', lead },
  );
  return sendNow(deps, delivery, connectorCredentials(connector));
}
