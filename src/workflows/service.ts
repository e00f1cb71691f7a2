import { recordAudit, type Actor } from '../audit/service.js';
import { findConnectors } from '../connectors/repository.js';
import { unsentHeaderWarnings } from '../connectors/service.js';
import type { Db, Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import type { WorkflowBlock } from '../db/schema.js';
import { newSigningSecret } from '../deliveries/attempt.js';
import { connectorProblem } from '../deliveries/compose.js';
import { maskKeyValues, maskUrl } from '../deliveries/masking.js';
import { findEndpointStates, setEndpointCap } from '../endpoints/repository.js';
import { enable } from '../endpoints/service.js';
import { deleteEndpoint } from '../deliveries/service.js';
import { findTagsByNames, insertMissingTags } from '../tags/repository.js';
import { Refused } from '../refused.js';
import { findWorkflowsAcrossWorkspaces, insertWorkflow, listWorkflows, setWorkflowActive, softDeleteWorkflow } from './repository.js';

/**
 * A workflow: one trigger (a tag_added trigger names its tag) and one Send Webhook (or Send to
 * CRM) block; a Custom URL block may have a cap (`maxPerSecond`).
 */
export type NewWorkflowInput = { workspaceId: number; block: WorkflowBlock; maxPerSecond?: number | null } & (
  | { trigger: 'lead_created' }
  | { trigger: 'tag_added'; tagName: string }
);

/**
 * Why runs of this block will fail, as warnings: a block is saved even when its connector is
 * unusable or its URL empty, and every run then records the configuration error (as for a
 * connector deleted later); headers that are never sent are named too.
 */
export async function blockWarnings(db: Db, workspaceId: number, block: WorkflowBlock): Promise<string[]> {
  if (block.endpoint !== 'url') {
    const problem = connectorProblem((await findConnectors(db, [block.connector_id], workspaceId)).get(block.connector_id), workspaceId, block.connector_id);
    return problem ? [`${problem} Runs of this workflow will fail until it is fixed.`] : [];
  }
  return [...(block.url.trim() === '' ? ['The Custom URL is empty: runs of this workflow will fail.'] : []), ...unsentHeaderWarnings(block.headers)];
}

/** The tag a tag_added trigger names, created when missing; none for lead_created. */
export async function triggerTag(
  db: Executor,
  workspaceId: number,
  trigger: { trigger: 'lead_created' } | { trigger: 'tag_added'; tagName: string },
): Promise<{ id: number; name: string } | null> {
  if (trigger.trigger !== 'tag_added') return null;
  await insertMissingTags(db, workspaceId, [trigger.tagName]);
  const [found] = await findTagsByNames(db, workspaceId, [trigger.tagName]);
  return { id: found!.id, name: found!.name };
}

/** Creates the workflow with its own signing secret; the tag of a tag_added trigger is created when missing. */
export async function createWorkflow(db: Db, actor: Actor, input: NewWorkflowInput) {
  const maxPerSecond = input.maxPerSecond ?? null;
  if (maxPerSecond !== null) requireCustomUrl(input.block, 'A cap (--max-per-second)');
  const warnings = await blockWarnings(db, input.workspaceId, input.block);
  return db.transaction().execute(async (trx) => {
    const tag = await triggerTag(trx, input.workspaceId, input);
    const created = await insertWorkflow(trx, {
      workspace_id: input.workspaceId,
      trigger: input.trigger,
      tag_id: tag?.id ?? null,
      block: input.block,
      signing_secret: newSigningSecret(),
    });
    if (maxPerSecond !== null) await setEndpointCap(trx, { kind: 'workflow', id: created.id }, maxPerSecond);
    await recordAudit(trx, {
      actor,
      workspaceId: input.workspaceId,
      action: 'workflow.created',
      target: { type: 'workflow', id: created.id },
      details: { trigger: input.trigger, tag_id: tag?.id ?? null, endpoint: input.block.endpoint, max_per_second: maxPerSecond },
    });
    return {
      id: created.id,
      workspace_id: created.workspace_id,
      trigger: created.trigger,
      tag,
      block: created.block,
      max_per_second: maxPerSecond,
      signing_secret: created.signing_secret,
      active: created.active,
      created_at: created.created_at,
      warnings,
    };
  });
}

/** A block as shown to an operator: credential-looking headers and URL parameters of a Custom URL masked. */
function presentBlock(block: WorkflowBlock): WorkflowBlock {
  return block.endpoint === 'url' ? { ...block, url: maskUrl(block.url), headers: maskKeyValues(block.headers) } : block;
}

/**
 * A workspace's workflows, oldest first; the signing secret is shown only at creation. A
 * Custom URL block's cap and health are the workflow's (a Saved connector or Send to CRM
 * block's are its connector's: `connector list`).
 */
export async function listWorkspaceWorkflows(db: Db, workspaceId: number) {
  const rows = await listWorkflows(db, workspaceId);
  const states = await findEndpointStates(
    db,
    'workflow',
    rows.map((row) => row.id),
    workspaceId,
  );
  return rows.map((row) => ({
    id: row.id,
    workspace_id: row.workspace_id,
    trigger: row.trigger,
    tag: row.tag_id === null ? null : { id: row.tag_id, name: row.tag_name },
    block: presentBlock(row.block),
    active: row.active,
    active_since: row.active_since,
    ...states.get(row.id)!,
    created_at: row.created_at,
  }));
}

/** Why a workflow's block has no cap or health of its own: it sends to a connector. */
function requireCustomUrl(block: WorkflowBlock, what: string): void {
  if (block.endpoint !== 'url') {
    throw new Refused(
      'not_applicable',
      `${what} belongs to the Custom URL block; this block sends to connector ${block.connector_id}: use \`connector update\` / \`connector enable\` --id ${block.connector_id}.`,
    );
  }
}

async function requireWorkflow(db: Executor, id: number) {
  const workflow = (await findWorkflowsAcrossWorkspaces(db, [id])).get(id);
  if (!workflow || workflow.deleted_at !== null) throw new Refused('not_found', `Workflow ${id} does not exist.`);
  return workflow;
}

/** Sets (a number) or removes (null) the cap of a workflow's Custom URL block. */
export async function updateWorkflowCap(db: Db, actor: Actor, id: number, maxPerSecond: number | null) {
  const workflow = await requireWorkflow(db, id);
  requireCustomUrl(workflow.block, 'A cap (--max-per-second)');
  return db.transaction().execute(async (trx) => {
    await setEndpointCap(trx, { kind: 'workflow', id }, maxPerSecond);
    await recordAudit(trx, { actor, workspaceId: workflow.workspace_id, action: 'workflow.updated', target: { type: 'workflow', id }, details: { max_per_second: maxPerSecond } });
    return { id, max_per_second: maxPerSecond };
  });
}

/** `workflow enable`: a Custom URL block disabled for sustained failure is sent to again, its failure count reset. */
export async function enableWorkflow(db: Db, actor: Actor, id: number) {
  const workflow = await requireWorkflow(db, id);
  requireCustomUrl(workflow.block, 'Health');
  return enable(db, actor, { kind: 'workflow', id, workspaceId: workflow.workspace_id });
}

/**
 * Pauses (false) or resumes (true) a workflow. A paused workflow fans out nothing, and the
 * events of the pause are never sent by it later, even after it is resumed.
 */
export function switchWorkflow(db: Executor, actor: Actor, id: number, active: boolean) {
  return inTransaction(db, async (trx) => {
    const workflow = await requireWorkflow(trx, id);
    const switched = await setWorkflowActive(trx, id, active);
    if (!switched) throw new Refused('not_found', `Workflow ${id} does not exist.`);
    await recordAudit(trx, { actor, workspaceId: workflow.workspace_id, action: active ? 'workflow.activated' : 'workflow.deactivated', target: { type: 'workflow', id } });
    return switched;
  });
}

/** `workflow delete`: it sends nothing more, its pending retries included (deleteEndpoint). */
export const deleteWorkflow = (db: Db, actor: Actor, id: number) => deleteEndpoint(db, actor, { kind: 'workflow', id }, softDeleteWorkflow);
