import { findConnectors, signingSecretsOf } from '../connectors/repository.js';
import type { Executor } from '../db/connect.js';
import type { DeliveryRow, HeaderRow } from '../db/schema.js';
import { findWorkflows } from '../workflows/repository.js';
import { authHeaders } from './headers.js';

// What a delivery row never holds: the connector's auth header and the signing secrets. They
// are read (and opened) from the connector, or the Custom URL block's workflow, at send time,
// so a rotated secret or changed credential applies to retries too.

export interface Credentials {
  /** Added over the row's headers (auth wins over a constant header of the same name). */
  headers: HeaderRow[];
  /** Every secret the message is signed with: one, or two during a rotation's overlap. */
  signingSecrets: string[];
}

/** The credentials of each delivery by id; a delivery whose connector or workflow is gone has none. */
export async function loadCredentials(db: Executor, rows: readonly DeliveryRow[], now = new Date()): Promise<Map<number, Credentials>> {
  const connectors = await findConnectors(db, rows.flatMap((row) => (row.connector_id === null ? [] : [row.connector_id])));
  const workflows = await findWorkflows(db, rows.flatMap((row) => (row.connector_id === null && row.workflow_id !== null ? [row.workflow_id] : [])));
  const credentials = new Map<number, Credentials>();
  for (const row of rows) {
    const connector = row.connector_id === null ? undefined : connectors.get(row.connector_id);
    const workflow = row.connector_id === null && row.workflow_id !== null ? workflows.get(row.workflow_id) : undefined;
    if (connector) credentials.set(row.id, { headers: authHeaders(connector.auth), signingSecrets: signingSecretsOf(connector, now) });
    else if (workflow) credentials.set(row.id, { headers: [], signingSecrets: [workflow.signing_secret] });
  }
  return credentials;
}
