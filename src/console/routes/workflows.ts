import type { Router } from 'express';
import type { AppContext } from '../../context.js';
import { blockShownToReader } from '../../deliveries/masking.js';
import { parseFormat, parseMethod, parsePairs } from '../../connectors/input.js';
import { parseTagName } from '../../tags/input.js';
import { parseTrigger } from '../../workflows/input.js';
import { listWorkspaceConnectors } from '../../connectors/service.js';
import type { WorkflowBlock } from '../../db/schema.js';
import { MAX_CONSTANT_FIELDS, MAX_HEADERS } from '../../deliveries/payload.js';
import { Refused } from '../../refused.js';
import { listTags } from '../../tags/repository.js';
import { editWorkflow } from '../../workflows/edit.js';
import { createWorkflow, enableWorkflow, listWorkspaceWorkflows, switchWorkflow, updateWorkflowCap, type NewWorkflowInput } from '../../workflows/service.js';
import { requireInWorkspace } from '../../workspaces/owned.js';
import { noticeOf } from '../notices.js';
import { actorOf, signedIn } from '../session.js';
import { render } from '../views.js';
import { capField } from './connector-form.js';
import { METHODS } from './connectors.js';
import { pairLines, pathId, text } from './form.js';

/** The Send Webhook block of the form: a Saved connector, a Send to CRM, or a Custom URL. */
async function blockOf(ctx: AppContext, workspaceId: number, body: unknown): Promise<WorkflowBlock> {
  const endpoint = text(body, 'endpoint');
  const fields = parsePairs(pairLines(text(body, 'fields')), 'Fields', MAX_CONSTANT_FIELDS);
  if (endpoint === 'connector' || endpoint === 'crm') {
    const connectorId = await requireInWorkspace(ctx.db, workspaceId, 'connectors', pathId(text(body, 'connector')));
    if (endpoint === 'crm' && fields.length > 0) throw new Refused('invalid_argument', "Fields do not apply to Send to CRM: the connector's own fields and mapping are sent.");
    return { endpoint, connector_id: connectorId, fields };
  }
  if (endpoint !== 'url') throw new Refused('invalid_argument', 'Choose a Saved connector, Send to CRM or a Custom URL.');
  return {
    endpoint: 'url',
    url: text(body, 'url'),
    method: parseMethod(text(body, 'method') || undefined),
    format: parseFormat(text(body, 'format') || undefined),
    headers: parsePairs(pairLines(text(body, 'headers')), 'Headers', MAX_HEADERS),
    fields,
  };
}

const triggerOf = (body: unknown) => parseTrigger(text(body, 'trigger'), 'Trigger');

export function addWorkflowRoutes(router: Router, ctx: AppContext): void {
  router.get('/workflows', async (req, res) => {
    const { workspaceId, canChange } = signedIn(res).user;
    const [listed, connectors, tags] = await Promise.all([
      listWorkspaceWorkflows(ctx.db, workspaceId),
      listWorkspaceConnectors(ctx.db, workspaceId),
      listTags(ctx.db, workspaceId, false),
    ]);
    const workflows = canChange ? listed : listed.map((workflow) => ({ ...workflow, block: blockShownToReader(workflow.block) }));
    render(res, 'workflows', { title: 'Workflows', page: 'workflows', notice: noticeOf(req), workflows, connectors, tags, methods: METHODS });
  });

  router.post('/workflows', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const trigger = triggerOf(req.body);
    const block = await blockOf(ctx, workspaceId, req.body);
    const maxPerSecond = capField(req.body, false);
    const input: NewWorkflowInput =
      trigger === 'tag_added' ? { workspaceId, block, maxPerSecond, trigger, tagName: parseTagName(text(req.body, 'tag'), 'Tag') } : { workspaceId, block, maxPerSecond, trigger };
    const created = await createWorkflow(ctx.db, actorOf(req, res), input);
    render(res, 'workflow-created', { title: 'Workflow saved', page: 'workflows', workflow: created }, 201);
  });

  router.get('/workflows/:id/edit', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const id = await requireInWorkspace(ctx.db, workspaceId, 'workflows', pathId(req.params.id));
    const [workflows, connectors, tags] = await Promise.all([
      listWorkspaceWorkflows(ctx.db, workspaceId),
      listWorkspaceConnectors(ctx.db, workspaceId),
      listTags(ctx.db, workspaceId, false),
    ]);
    render(res, 'workflow-edit', { title: `Edit workflow ${id}`, page: 'workflows', editing: workflows.find((row) => row.id === id), connectors, tags, methods: METHODS });
  });

  router.post('/workflows/:id/edit', async (req, res) => {
    const workspaceId = signedIn(res).user.workspaceId;
    const id = await requireInWorkspace(ctx.db, workspaceId, 'workflows', pathId(req.params.id));
    const trigger = triggerOf(req.body);
    const parsed = await blockOf(ctx, workspaceId, req.body);
    // Left empty, the stored URL and headers stay: the page shows them masked, never to be sent back.
    const block =
      parsed.endpoint !== 'url' ? parsed : { ...parsed, url: parsed.url.trim() === '' ? undefined : parsed.url, headers: parsed.headers.length === 0 ? undefined : parsed.headers };
    await editWorkflow(ctx.db, actorOf(req, res), id, trigger === 'tag_added' ? { trigger, tagName: parseTagName(text(req.body, 'tag'), 'Tag'), block } : { trigger, block });
    res.redirect(303, '/console/workflows?notice=workflow-updated');
  });

  router.post('/workflows/:id/:action', async (req, res) => {
    const id = await requireInWorkspace(ctx.db, signedIn(res).user.workspaceId, 'workflows', pathId(req.params.id));
    const action = req.params.action;
    if (action === 'activate' || action === 'deactivate') await switchWorkflow(ctx.db, actorOf(req, res), id, action === 'activate');
    else if (action === 'enable') await enableWorkflow(ctx.db, actorOf(req, res), id);
    else if (action === 'cap') await updateWorkflowCap(ctx.db, actorOf(req, res), id, capField(req.body, true));
    else throw new Refused('not_found', `Workflow ${id} has no action "${action}".`);
    res.redirect(303, '/console/workflows?notice=workflow-updated');
  });
}
