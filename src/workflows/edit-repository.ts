import type { Executor } from '../db/connect.js';
import type { WorkflowBlock, WorkflowTrigger } from '../db/schema.js';
import { sealedBlock } from './repository.js';

/** Replaces a workflow's trigger, tag and block (its credential headers sealed for it); its secret, state and cap stay. */
export function updateWorkflowDefinition(
  db: Executor,
  workflow: { id: number; workspace_id: number },
  definition: { trigger: WorkflowTrigger; tag_id: number | null; block: WorkflowBlock },
) {
  return db
    .updateTable('workflows')
    .set({ trigger: definition.trigger, tag_id: definition.tag_id, block: sealedBlock(workflow, definition.block) })
    .where('workspace_id', '=', workflow.workspace_id)
    .where('id', '=', workflow.id)
    .returning('id')
    .executeTakeFirst();
}
