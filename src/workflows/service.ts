import { findConnectors } from '../connectors/repository.js';
import { unsentHeaderWarnings } from '../connectors/service.js';
import type { Db } from '../db/connect.js';
import type { WorkflowBlock } from '../db/schema.js';
import { newSigningSecret } from '../deliveries/attempt.js';
import { connectorProblem } from '../deliveries/compose.js';
import { findTagsByNames, insertMissingTags } from '../tags/repository.js';
import { insertWorkflow } from './repository.js';

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
