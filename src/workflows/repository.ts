import type { Executor } from '../db/connect.js';
import type { WorkflowBlock, WorkflowRow, WorkflowTrigger } from '../db/schema.js';

export interface NewWorkflow {
  workspace_id: number;
  trigger: WorkflowTrigger;
  tag_id: number | null;
  block: WorkflowBlock;
  signing_secret: string;
}

export async function insertWorkflow(db: Executor, workflow: NewWorkflow): Promise<WorkflowRow> {
  return db.insertInto('workflows').values({ ...workflow, block: JSON.stringify(workflow.block) }).returningAll().executeTakeFirstOrThrow();
}

/** Active workflows of these workspaces, in creation order. */
export async function findActiveWorkflows(db: Executor, workspaceIds: readonly number[]): Promise<WorkflowRow[]> {
  if (workspaceIds.length === 0) return [];
  return db.selectFrom('workflows').selectAll()
    .where('workspace_id', 'in', [...new Set(workspaceIds)]).where('active', '=', true)
    .orderBy('id').execute();
}
