import { findConnectors } from '../connectors/repository.js';
import { unsentHeaderWarnings } from '../connectors/service.js';
import type { Db } from '../db/connect.js';
import type { WorkflowBlock } from '../db/schema.js';
import { newSigningSecret } from '../deliveries/attempt.js';
import { connectorProblem } from '../deliveries/compose.js';
import { maskKeyValues, maskUrl } from '../deliveries/masking.js';
import { findTagsByNames, insertMissingTags } from '../tags/repository.js';
import { Refused } from '../refused.js';
import { insertWorkflow, listWorkflows, setWorkflowActive } from './repository.js';

/** A workflow: one trigger (a tag_added trigger names its tag) and one Send Webhook (or Send to CRM) block. */
export type NewWorkflowInput = { workspaceId: number; block: WorkflowBlock } & (
  | { trigger: 'lead_created' }
  | { trigger: 'tag_added'; tagName: string }
);

/**
 * Why runs of this block will fail, as warnings: a block is saved even when its connector is
 * unusable or its URL empty, and every run then records the configuration error (as for a
 * connector deleted later); headers that are never sent are named too.
 */
async function blockWarnings(db: Db, workspaceId: number, block: WorkflowBlock): Promise<string[]> {
  if (block.endpoint !== 'url') {
    const problem = connectorProblem((await findConnectors(db, [block.connector_id])).get(block.connector_id), workspaceId, block.connector_id);
    return problem ? [`${problem} Runs of this workflow will fail until it is fixed.`] : [];
  }
  return [...(block.url.trim() === '' ? ['The Custom URL is empty: runs of this workflow will fail.'] : []), ...unsentHeaderWarnings(block.headers)];
}

/** Creates the workflow with its own signing secret; the tag of a tag_added trigger is created when missing. */
export async function createWorkflow(db: Db, input: NewWorkflowInput) {
  const warnings = await blockWarnings(db, input.workspaceId, input.block);
  return db.transaction().execute(async (trx) => {
    let tag: { id: number; name: string } | null = null;
    if (input.trigger === 'tag_added') {
      await insertMissingTags(trx, input.workspaceId, [input.tagName]);
      const [found] = await findTagsByNames(trx, input.workspaceId, [input.tagName]);
      tag = { id: found!.id, name: found!.name };
    }
    const created = await insertWorkflow(trx, {
      workspace_id: input.workspaceId, trigger: input.trigger, tag_id: tag?.id ?? null, block: input.block, signing_secret: newSigningSecret(),
    });
    return {
      id: created.id, workspace_id: created.workspace_id, trigger: created.trigger, tag, block: created.block,
      signing_secret: created.signing_secret, active: created.active, created_at: created.created_at, warnings,
    };
  });
}

/** A block as shown to an operator: credential-looking headers and URL parameters of a Custom URL masked. */
function presentBlock(block: WorkflowBlock): WorkflowBlock {
  return block.endpoint === 'url' ? { ...block, url: maskUrl(block.url), headers: maskKeyValues(block.headers) } : block;
}

/** A workspace's workflows, oldest first; the signing secret is shown only at creation. */
export async function listWorkspaceWorkflows(db: Db, workspaceId: number) {
  const rows = await listWorkflows(db, workspaceId);
  return rows.map((row) => ({
    id: row.id, workspace_id: row.workspace_id, trigger: row.trigger,
    tag: row.tag_id === null ? null : { id: row.tag_id, name: row.tag_name }, block: presentBlock(row.block),
    active: row.active, active_since: row.active_since, created_at: row.created_at,
  }));
}

/**
 * Pauses (false) or resumes (true) a workflow. A paused workflow fans out nothing, and the
 * events of the pause are never sent by it later, even after it is resumed.
 */
export async function switchWorkflow(db: Db, id: number, active: boolean) {
  const switched = await setWorkflowActive(db, id, active);
  if (!switched) throw new Refused('not_found', `Workflow ${id} does not exist.`);
  return switched;
}
