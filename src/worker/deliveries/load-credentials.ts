import { findConnectors } from '../../connectors/repository.js';
import type { Executor } from '../../db/connect.js';
import type { DeliveryRow } from '../../db/schema.js';
import { connectorCredentials, workflowCredentials, type Credentials } from '../../deliveries/credentials.js';
import { findWorkflows } from '../../workflows/repository.js';

/**
 * The credentials of each claimed delivery of one workspace by id, two queries for the batch: its
 * connector's, or for a Custom URL block its workflow's. A delivery whose connector or workflow is
 * gone or deleted has none, so it is never sent (its pending ones were finished by the delete; this
 * catches one a fan-out composed from what it read just before the delete committed).
 */
export async function loadCredentials(db: Executor, workspaceId: number, rows: readonly DeliveryRow[], now = new Date()): Promise<Map<number, Credentials>> {
  const connectors = await findConnectors(
    db,
    rows.flatMap((row) => (row.connector_id === null ? [] : [row.connector_id])),
    workspaceId,
  );
  const workflows = await findWorkflows(
    db,
    rows.flatMap((row) => (row.workflow_id === null ? [] : [row.workflow_id])),
    workspaceId,
  );
  const credentials = new Map<number, Credentials>();
  for (const row of rows) {
    const connector = row.connector_id === null ? undefined : connectors.get(row.connector_id);
    const workflow = row.workflow_id === null ? undefined : workflows.get(row.workflow_id);
    if (row.workflow_id !== null && (!workflow || workflow.deleted_at !== null)) continue;
    if (row.connector_id !== null) {
      if (connector && connector.deleted_at === null) credentials.set(row.id, connectorCredentials(connector, now));
    } else if (workflow) {
      credentials.set(row.id, workflowCredentials(workflow.signing_secret));
    }
  }
  return credentials;
}
