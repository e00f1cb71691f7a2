import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import { jsonParameter } from '../db/sql.js';
import type { WorkflowBlock, WorkflowRow, WorkflowTrigger } from '../db/schema.js';
import { mapBlockCredentials } from '../secrets/credential-headers.js';
import { insertWithIdentity, nextIdentity } from '../db/identity.js';
import { openedOrEmpty, secretsAt } from '../secrets/keyring.js';

export interface NewWorkflow {
  workspace_id: number;
  trigger: WorkflowTrigger;
  tag_id: number | null;
  block: WorkflowBlock;
  signing_secret: string;
}

/** A workflow's secrets are sealed for it (workspace and id) and their column (src/secrets/keyring.ts). */
export const workflowSecrets = (workflow: { id: number; workspace_id: number }, column: 'signing_secret' | 'block') =>
  secretsAt({ table: 'workflows', column, workspaceId: workflow.workspace_id, row: workflow.id });

/** The block as stored: its credential headers sealed for this workflow. */
export const sealedBlock = (workflow: { id: number; workspace_id: number }, block: WorkflowBlock) =>
  jsonParameter(mapBlockCredentials(block, workflowSecrets(workflow, 'block').seal));

/** Inserts the workflow under an id taken first, as its secrets are sealed for it. */
export async function insertWorkflow(db: Executor, workflow: NewWorkflow): Promise<WorkflowRow> {
  const id = await nextIdentity(db, 'workflows');
  const place = { id, workspace_id: workflow.workspace_id };
  return openWorkflow(
    await insertWithIdentity(db, 'workflows', {
      ...workflow,
      id,
      block: sealedBlock(place, workflow.block),
      signing_secret: workflowSecrets(place, 'signing_secret').seal(workflow.signing_secret),
    }),
  );
}

/** A stored block with its credential headers opened. */
const openBlock = (row: { id: number; workspace_id: number; block: WorkflowBlock }) => mapBlockCredentials(row.block, workflowSecrets(row, 'block').open);

/** The stored row with its signing secret and its block's credential headers opened (the table holds them sealed). */
export const openWorkflow = (row: WorkflowRow): WorkflowRow => ({
  ...row,
  block: openBlock(row),
  signing_secret: workflowSecrets(row, 'signing_secret').open(row.signing_secret),
});

/** Seals every workflow's secrets again with the current key, for their place (after a key change, or v1 values); returns how many. */
export async function resealWorkflows(db: Executor): Promise<number> {
  const rows = await db.selectFrom('workflows').select(['id', 'workspace_id', 'block', 'signing_secret']).orderBy('id').execute();
  for (const row of rows) {
    const signing = workflowSecrets(row, 'signing_secret');
    await db
      .updateTable('workflows')
      .set({ block: sealedBlock(row, openBlock(row)), signing_secret: signing.seal(signing.open(row.signing_secret)) })
      .where('workspace_id', '=', row.workspace_id)
      .where('id', '=', row.id)
      .execute();
  }
  return rows.length;
}

/** A workspace's workflows by id, whatever their state: a workflow of another workspace reads as missing. */
export async function findWorkflows(db: Executor, ids: readonly number[], workspaceId: number): Promise<Map<number, WorkflowRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('workflows')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((row) => [row.id, openWorkflow(row)]));
}

/** Workflows by id in any workspace: for the operator's commands (the CLI), which name ids alone. */
export async function findWorkflowsAcrossWorkspaces(db: Executor, ids: readonly number[]): Promise<Map<number, WorkflowRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('workflows')
    .selectAll()
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((row) => [row.id, openWorkflow(row)]));
}

/** Active workflows of these workspaces, in creation order. */
export async function findActiveWorkflows(db: Executor, workspaceIds: readonly number[]): Promise<WorkflowRow[]> {
  if (workspaceIds.length === 0) return [];
  return db
    .selectFrom('workflows')
    .selectAll()
    .where('workspace_id', 'in', [...new Set(workspaceIds)])
    .where('active', '=', true)
    .orderBy('id')
    .execute()
    .then((rows) => rows.map(openWorkflow));
}

/** A workspace's workflows that are not deleted, with their tag's name, in creation order, to be shown (block credentials opened leniently: openedOrEmpty). */
export async function listWorkflows(db: Executor, workspaceId: number) {
  return db
    .selectFrom('workflows')
    .leftJoin('tags', (join) => join.onRef('tags.workspace_id', '=', 'workflows.workspace_id').onRef('tags.id', '=', 'workflows.tag_id'))
    .select([
      'workflows.id',
      'workflows.workspace_id',
      'workflows.trigger',
      'workflows.tag_id',
      'tags.name as tag_name',
      'workflows.block',
      'workflows.active',
      'workflows.active_since',
      'workflows.created_at',
    ])
    .where('workflows.workspace_id', '=', workspaceId)
    .where('workflows.deleted_at', 'is', null)
    .orderBy('workflows.id')
    .execute()
    .then((rows) => rows.map((row) => ({ ...row, block: mapBlockCredentials(row.block, openedOrEmpty(workflowSecrets(row, 'block').open)) })));
}

/**
 * Pauses or resumes a workflow that is not deleted. Resuming a paused one sets `active_since`
 * (events that occurred before are not fanned out to it); switching to the state it has
 * changes nothing.
 */
export async function setWorkflowActive(db: Executor, id: number, active: boolean): Promise<{ id: number; active: boolean } | undefined> {
  if (!active) return db.updateTable('workflows').set({ active: false }).where('id', '=', id).where('deleted_at', 'is', null).returning(['id', 'active']).executeTakeFirst();
  // Only a paused one is resumed (two statements: Citus refuses now() inside a CASE of an UPDATE).
  const resumed = await db
    .updateTable('workflows')
    .set({ active: true, active_since: sql<string>`now()` })
    .where('id', '=', id)
    .where('active', '=', false)
    .where('deleted_at', 'is', null)
    .returning(['id', 'active'])
    .executeTakeFirst();
  return resumed ?? db.selectFrom('workflows').where('id', '=', id).where('deleted_at', 'is', null).select(['id', 'active']).executeTakeFirst();
}

/** Marks the workflow deleted and inactive (nothing is fanned out to it any more); undefined when there is no such workflow not yet deleted. */
export async function softDeleteWorkflow(db: Executor, id: number): Promise<{ id: number; workspace_id: number } | undefined> {
  return db
    .updateTable('workflows')
    .set({ deleted_at: sql<string>`now()`, active: false })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returning(['id', 'workspace_id'])
    .executeTakeFirst();
}
