import { findConnectors } from '../connectors/repository.js';
import type { Executor } from '../db/connect.js';
import type { DeliveryRow } from '../db/schema.js';
import { connectorCredentials, workflowCredentials, type Credentials } from '../deliveries/credentials.js';
import { findWorkflows } from '../workflows/repository.js';

/**
 * The credentials of each claimed delivery of one workspace by id, two queries for the batch: its connector's,
 * or for a Custom URL block its workflow's. A delivery whose connector or workflow is gone has none.
 */
export async function loadCredentials(db: Executor, workspaceId: number, rows: readonly DeliveryRow[], now = new Date()): Promise<Map<number, Credentials>> {
  const connectors = await findConnectors(db, rows.flatMap((row) => (row.connector_id === null ? [] : [row.connector_id])), workspaceId);
  const workflows = await findWorkflows(db, rows.flatMap((row) => (row.connector_id === null && row.workflow_id !== null ? [row.workflow_id] : [])), workspaceId);
  const credentials = new Map<number, Credentials>();
  for (const row of rows) {
    const connector = row.connector_id === null ? undefined : connectors.get(row.connector_id);
    const workflow = row.connector_id === null && row.workflow_id !== null ? workflows.get(row.workflow_id) : undefined;
    if (connector) credentials.set(row.id, connectorCredentials(connector, now));
    else if (workflow) credentials.set(row.id, workflowCredentials(workflow.signing_secret));
  }
  return credentials;
}
