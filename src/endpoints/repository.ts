import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { EndpointKind } from '../db/schema.js';

// The `endpoints` table (migration 0009): an endpoint's health, its cap and the cap's slots.
// The worker's claim and record statements (src/deliveries/attempt-repository.ts) read and
// write it too, through the fragments below.

/** An endpoint: a connector, or the workflow of a Custom URL block. */
export interface EndpointRef {
  kind: EndpointKind;
  id: number;
}

/**
 * The endpoint a delivery row goes to, as SQL over the row's alias: its connector when it has
 * one (push, Saved connector and Send to CRM blocks), else its workflow (a Custom URL block).
 * A Send test has none: it is never held back, never refused for a disabled endpoint and
 * never counted in the endpoint's health.
 */
export function deliveryEndpoint(alias: string): { kind: RawBuilder<EndpointKind | null>; id: RawBuilder<number | null> } {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  return {
    kind: sql<EndpointKind | null>`CASE WHEN ${column('sender')} = 'test' THEN NULL
      WHEN ${column('connector_id')} IS NOT NULL THEN 'connector' WHEN ${column('workflow_id')} IS NOT NULL THEN 'workflow' END`,
    id: sql<number | null>`coalesce(${column('connector_id')}, ${column('workflow_id')})`,
  };
}

/**
 * Where a connector's or a workflow's deliveries go while it is not deleted: the connector
 * itself; for a workflow its block's endpoint, the workflow for a Custom URL, else the connector
 * it sends to. Undefined when it is missing from the workspace or deleted.
 */
export async function liveEndpointOf(db: Executor, workspaceId: number, owner: EndpointRef): Promise<EndpointRef | undefined> {
  if (owner.kind === 'connector') {
    const row = await db
      .selectFrom('connectors')
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', owner.id)
      .where('deleted_at', 'is', null)
      .select('id')
      .executeTakeFirst();
    return row && { kind: 'connector', id: row.id };
  }
  const row = await db
    .selectFrom('workflows')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', owner.id)
    .where('deleted_at', 'is', null)
    .select(['id', sql<string>`block->>'endpoint'`.as('endpoint'), sql<number | null>`(block->>'connector_id')::int`.as('connector_id')])
    .executeTakeFirst();
  if (!row) return undefined;
  return row.endpoint === 'url' || row.connector_id === null ? { kind: 'workflow', id: row.id } : { kind: 'connector', id: row.connector_id };
}

/** The header name of a connector's `header` authentication, when it has one (read as stored: only its value is sealed). */
export async function authHeaderName(db: Executor, workspaceId: number, connectorId: number): Promise<string | undefined> {
  const row = await db
    .selectFrom('connectors')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', connectorId)
    .select(sql<string | null>`CASE WHEN auth->>'type' = 'header' THEN auth->>'name' END`.as('name'))
    .executeTakeFirst();
  return row?.name ?? undefined;
}

/**
 * The keys of the constant fields a delivery's connector and workflow block configure now (read
 * as stored: a field is not sealed), for showing the delivery to a reader with their values masked.
 */
export async function configuredFieldKeys(db: Executor, workspaceId: number, owner: { connectorId: number | null; workflowId: number | null }): Promise<Set<string>> {
  const keysOf = (table: 'connectors' | 'workflows', id: number) =>
    db
      .selectFrom(table)
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .select(
        sql<string[]>`ARRAY(SELECT field->>'key' FROM jsonb_array_elements(coalesce(${table === 'connectors' ? sql.ref('fields') : sql`block->'fields'`}, '[]')) AS field)`.as(
          'keys',
        ),
      )
      .executeTakeFirst();
  const rows = await Promise.all([
    owner.connectorId === null ? undefined : keysOf('connectors', owner.connectorId),
    owner.workflowId === null ? undefined : keysOf('workflows', owner.workflowId),
  ]);
  return new Set(rows.flatMap((row) => row?.keys ?? []));
}

/** When an endpoint is to be disabled (src/deliveries/endpoint-health.ts): every attempt failed for long enough, and enough of them. */
export interface HealthPolicy {
  failingForSeconds: number;
  minFailures: number;
}

/** The disabling rule as SQL over an `endpoints` row's alias; the policy's values may be placeholders of a prepared statement. */
export function failingLongEnough(alias: string, policy: { failingForSeconds: unknown; minFailures: unknown }): RawBuilder<boolean> {
  return sql<boolean>`(${sql.ref(`${alias}.failing_since`)} <= now() - make_interval(secs => ${policy.failingForSeconds}::float8)
    AND ${sql.ref(`${alias}.consecutive_failures`)} >= ${policy.minFailures}::int)`;
}

/** An endpoint's state as an operator sees it; an endpoint without a row is healthy and uncapped. */
export interface EndpointState {
  max_per_second: number | null;
  disabled_at: string | null;
  disabled_reason: string | null;
  failing_since: string | null;
  consecutive_failures: number;
}

const NO_STATE: EndpointState = { max_per_second: null, disabled_at: null, disabled_reason: null, failing_since: null, consecutive_failures: 0 };

/** The state of these endpoints of one kind of a workspace, by id (every id given, healthy and uncapped when it has no row). */
export async function findEndpointStates(db: Executor, kind: EndpointKind, ids: readonly number[], workspaceId: number): Promise<Map<number, EndpointState>> {
  const rows =
    ids.length === 0
      ? []
      : await db
          .selectFrom('endpoints')
          .select(['endpoint_id', 'max_per_second', 'disabled_at', 'disabled_reason', 'failing_since', 'consecutive_failures'])
          .where('workspace_id', '=', workspaceId)
          .where('kind', '=', kind)
          .where('endpoint_id', 'in', [...new Set(ids)])
          .execute();
  const found = new Map(rows.map(({ endpoint_id, ...state }) => [endpoint_id, state]));
  return new Map(ids.map((id) => [id, found.get(id) ?? NO_STATE]));
}

/**
 * Sets (a number) or removes (null) an endpoint's cap. Deliveries already held back keep their
 * turn; those held back from now on queue from now.
 */
export async function setEndpointCap(db: Executor, endpoint: EndpointRef, maxPerSecond: number | null): Promise<void> {
  const changed = { max_per_second: maxPerSecond, queued_until: sql<string>`now()` };
  if (maxPerSecond === null) {
    await db.updateTable('endpoints').set(changed).where('kind', '=', endpoint.kind).where('endpoint_id', '=', endpoint.id).execute();
    return;
  }
  // The row takes its workspace from the connector or workflow it describes (the CLI names only the id).
  const owners = endpoint.kind === 'connector' ? 'connectors' : 'workflows';
  // The time comes from the SELECT: Citus refuses now() in ON CONFLICT DO UPDATE.
  await db
    .insertInto('endpoints')
    .columns(['workspace_id', 'kind', 'endpoint_id', 'max_per_second', 'queued_until'])
    .expression((eb) =>
      eb
        .selectFrom(owners)
        .where('id', '=', endpoint.id)
        .select(['workspace_id', sql.lit(endpoint.kind).as('kind'), 'id', sql<number>`${maxPerSecond}::float8`.as('max_per_second'), sql<string>`now()`.as('queued_until')]),
    )
    .onConflict((conflict) =>
      conflict
        .columns(['kind', 'endpoint_id', 'workspace_id'])
        .doUpdateSet((eb) => ({ max_per_second: eb.ref('excluded.max_per_second'), queued_until: eb.ref('excluded.queued_until') })),
    )
    .execute();
}

/**
 * Turns an endpoint back on: not disabled, no failures counted, no pause or queue left from
 * before. Returns when and why it had been disabled (nulls when it was not).
 */
export async function enableEndpoint(db: Executor, endpoint: EndpointRef): Promise<{ disabled_at: string | null; disabled_reason: string | null }> {
  // The CLI names the endpoint alone: its workspace is read first, as Citus locks a row only by it.
  const owner = await db.selectFrom('endpoints').where('kind', '=', endpoint.kind).where('endpoint_id', '=', endpoint.id).select('workspace_id').executeTakeFirst();
  if (!owner) return { disabled_at: null, disabled_reason: null };
  const { rows } = await sql<{ disabled_at: string | null; disabled_reason: string | null }>`
    WITH before AS (
      SELECT kind, endpoint_id, disabled_at, disabled_reason FROM endpoints
      WHERE workspace_id = ${owner.workspace_id} AND kind = ${endpoint.kind} AND endpoint_id = ${endpoint.id} FOR UPDATE
    )
    UPDATE endpoints AS e SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL, consecutive_failures = 0,
      next_slot_at = now(), queued_until = now()
    FROM before AS b WHERE e.workspace_id = ${owner.workspace_id} AND e.kind = b.kind AND e.endpoint_id = b.endpoint_id
    RETURNING b.disabled_at, b.disabled_reason
  `.execute(db);
  return rows[0] ?? { disabled_at: null, disabled_reason: null };
}

export interface DisabledEndpoint extends EndpointRef {
  disabled_at: string;
  disabled_reason: string;
  failing_since: string;
  consecutive_failures: number;
}

/**
 * Disables the endpoint when the rule still holds and it is not disabled yet; returns it when
 * this call disabled it. Of several workers trying at once, one does: the others find it
 * disabled once the first commits.
 */
export async function disableEndpoint(db: Executor, endpoint: EndpointRef & { workspace_id: number }, reason: string, policy: HealthPolicy): Promise<DisabledEndpoint | undefined> {
  const row = await db
    .updateTable('endpoints as e')
    .set({ disabled_at: sql<string>`now()`, disabled_reason: reason })
    .where('e.workspace_id', '=', endpoint.workspace_id)
    .where('e.kind', '=', endpoint.kind)
    .where('e.endpoint_id', '=', endpoint.id)
    .where('e.disabled_at', 'is', null)
    .where(failingLongEnough('e', policy))
    .returning(['e.disabled_at', 'e.disabled_reason', 'e.failing_since', 'e.consecutive_failures'])
    .executeTakeFirst();
  return row && ({ kind: endpoint.kind, id: endpoint.id, ...row } as DisabledEndpoint);
}
