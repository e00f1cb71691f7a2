import { recordAudit, type Actor } from '../audit/service.js';
import type { Db } from '../db/connect.js';
import type { WorkflowBlock } from '../db/schema.js';
import { maskKeyValues, maskUrl } from '../deliveries/masking.js';
import { Refused } from '../refused.js';
import { isCredentialName } from '../secrets/credential-headers.js';
import { updateWorkflowDefinition } from './edit-repository.js';
import { findWorkflowsAcrossWorkspaces } from './repository.js';
import { blockWarnings, triggerTag } from './service.js';

/** What an edit may leave out of a Custom URL block: the stored URL and headers are kept (they are shown masked, never sent back). */
type CustomUrlBlock = Extract<WorkflowBlock, { endpoint: 'url' }>;
export type EditedBlock = Exclude<WorkflowBlock, CustomUrlBlock> | (Omit<CustomUrlBlock, 'url' | 'headers'> & Partial<Pick<CustomUrlBlock, 'url' | 'headers'>>);
export type WorkflowEdit = { block: EditedBlock } & ({ trigger: 'lead_created' } | { trigger: 'tag_added'; tagName: string });

const originOf = (url: string): string | null => (URL.canParse(url) ? new URL(url).origin : null);

/**
 * `workflow edit`: a new trigger, tag and block for a workflow; its signing secret, state
 * (active or not, since when), cap and health stay. A Custom URL block edited into a Custom
 * URL keeps the stored URL and headers when the edit gives none, except that a URL moved to
 * another origin drops the stored credential headers (they were meant for the old receiver,
 * and the person editing never saw them): they are sent again only when entered again.
 */
export async function editWorkflow(db: Db, actor: Actor, id: number, input: WorkflowEdit) {
  const workflow = (await findWorkflowsAcrossWorkspaces(db, [id])).get(id);
  if (!workflow) throw new Refused('not_found', `Workflow ${id} does not exist.`);
  const stored = workflow.block.endpoint === 'url' ? workflow.block : null;
  const movedAway = stored !== null && input.block.endpoint === 'url' && input.block.url !== undefined && originOf(input.block.url) !== originOf(stored.url);
  const keptHeaders = (stored?.headers ?? []).filter(({ key }) => !movedAway || !isCredentialName(key));
  const dropped = (stored?.headers.length ?? 0) - keptHeaders.length;
  const block: WorkflowBlock =
    input.block.endpoint !== 'url'
      ? input.block
      : {
          ...input.block,
          url: input.block.url ?? stored?.url ?? '',
          headers: input.block.headers ?? keptHeaders,
        };
  const warnings = await blockWarnings(db, workflow.workspace_id, block);
  if (input.block.endpoint === 'url' && input.block.headers === undefined && dropped > 0) {
    warnings.push(`The URL moved to another origin: its ${dropped} stored credential header(s) were removed. Enter them again to send them to the new URL.`);
  }
  return db.transaction().execute(async (trx) => {
    const tag = await triggerTag(trx, workflow.workspace_id, input);
    await updateWorkflowDefinition(trx, workflow, { trigger: input.trigger, tag_id: tag?.id ?? null, block });
    await recordAudit(trx, {
      actor,
      workspaceId: workflow.workspace_id,
      action: 'workflow.edited',
      target: { type: 'workflow', id },
      details: { trigger: input.trigger, tag_id: tag?.id ?? null, endpoint: block.endpoint },
    });
    const shown = block.endpoint === 'url' ? { ...block, url: maskUrl(block.url), headers: maskKeyValues(block.headers) } : block;
    return { id, trigger: input.trigger, tag, block: shown, warnings };
  });
}
