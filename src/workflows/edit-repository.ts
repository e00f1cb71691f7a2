import type { Executor } from '../db/connect.js';
import { jsonParameter } from '../db/sql.js';
import type { WorkflowBlock, WorkflowTrigger } from '../db/schema.js';
import { mapBlockCredentials } from '../secrets/credential-headers.js';
import { sealSecret } from '../secrets/keyring.js';

/** Replaces a workflow's trigger, tag and block (its credential headers sealed); its secret, state and cap stay. */
export function updateWorkflowDefinition(db: Executor, id: number, definition: { trigger: WorkflowTrigger; tag_id: number | null; block: WorkflowBlock }) {
  return db
    .updateTable('workflows')
    .set({ trigger: definition.trigger, tag_id: definition.tag_id, block: jsonParameter(mapBlockCredentials(definition.block, sealSecret)) })
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
}
