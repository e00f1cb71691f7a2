import type { Command } from 'commander';
import { OPERATOR } from '../../audit/service.js';
import type { WorkflowBlock } from '../../db/schema.js';
import { MAX_CONSTANT_FIELDS, MAX_HEADERS } from '../../deliveries/payload.js';
import { Refused } from '../../refused.js';
import { editWorkflow } from '../../workflows/edit.js';
import { createWorkflow, deleteWorkflow, enableWorkflow, listWorkspaceWorkflows, switchWorkflow, updateWorkflowCap, type NewWorkflowInput } from '../../workflows/service.js';
import { requireWorkspace } from '../../workspaces/service.js';
import { parseFormat, parseMaxPerSecond, parseMethod, parsePairs } from '../../connectors/input.js';
import { positiveId } from '../../input.js';
import { parseTagName } from '../../tags/input.js';
import { parseTrigger as parseTriggerValue } from '../../workflows/input.js';
import { collect } from '../arguments.js';
import { runCommand } from '../cli-context.js';

interface WorkflowOptions {
  workspace: string;
  trigger: string;
  tag?: string;
  connector?: string;
  url?: string;
  sendToCrm?: string;
  method?: string;
  format?: string;
  header: string[];
  field: string[];
  maxPerSecond?: string;
}

/** The trigger: lead_created, or tag_added with its tag. */
function parseTrigger(options: WorkflowOptions): Pick<NewWorkflowInput, 'trigger'> & { tag?: string } {
  const trigger = parseTriggerValue(options.trigger, '--trigger');
  if (trigger === 'tag_added' && options.tag === undefined) throw new Refused('invalid_argument', '--trigger tag_added needs --tag.');
  if (trigger === 'lead_created' && options.tag !== undefined) throw new Refused('invalid_argument', '--tag only goes with --trigger tag_added.');
  return { trigger, tag: options.tag };
}

/** The block: a Saved connector (--connector), a Send to CRM (--send-to-crm) or a Custom URL (--url). */
function parseBlock(options: WorkflowOptions): WorkflowBlock {
  const endpoints = [options.connector, options.url, options.sendToCrm].filter((value) => value !== undefined);
  if (endpoints.length !== 1) throw new Refused('invalid_argument', 'Give exactly one of --connector, --url or --send-to-crm.');
  if (options.sendToCrm !== undefined && options.field.length > 0)
    throw new Refused('invalid_argument', "--field does not apply to --send-to-crm: the connector's own fields and mapping are sent.");
  const fields = parsePairs(options.field, '--field', MAX_CONSTANT_FIELDS);
  if (options.connector !== undefined) return { endpoint: 'connector', connector_id: positiveId(options.connector, '--connector'), fields };
  if (options.sendToCrm !== undefined) return { endpoint: 'crm', connector_id: positiveId(options.sendToCrm, '--send-to-crm'), fields };
  const headers = parsePairs(options.header, '--header', MAX_HEADERS);
  return { endpoint: 'url', url: options.url!, method: parseMethod(options.method), format: parseFormat(options.format), headers, fields };
}

export function registerWorkflowCommands(program: Command): void {
  const workflow = program.command('workflow').description('Workflows with one Send Webhook block');
  workflow
    .command('create')
    .requiredOption('--workspace <id>')
    .requiredOption('--trigger <trigger>', 'lead_created or tag_added')
    .option('--tag <name>', 'the tag of a tag_added trigger (created when missing)')
    .option('--connector <id>', 'Saved connector endpoint')
    .option('--url <url>', 'Custom URL endpoint (merge tags allowed)')
    .option('--send-to-crm <id>', "a Send to CRM block instead: the connector's own push")
    .option('--method <method>', 'Custom URL method', 'POST')
    .option('--format <format>', 'Custom URL body format', 'json')
    .option('--header <name=value>', 'Custom URL header (repeatable, merge tags allowed)', collect, [])
    .option('--field <key=value>', 'block field (repeatable, merge tags allowed)', collect, [])
    .option('--max-per-second <n>', 'Custom URL: at most this many deliveries per second, across every worker (default: no cap)')
    .action((options: WorkflowOptions) =>
      runCommand(async ({ db }) => {
        const { trigger, tag } = parseTrigger(options);
        const block = parseBlock(options);
        const maxPerSecond = options.maxPerSecond === undefined ? null : parseMaxPerSecond(options.maxPerSecond, '--max-per-second', { allowOff: false });
        const workspace = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        const input: NewWorkflowInput =
          trigger === 'tag_added'
            ? { workspaceId: workspace.id, block, maxPerSecond, trigger, tagName: parseTagName(tag!, '--tag') }
            : { workspaceId: workspace.id, block, maxPerSecond, trigger };
        return createWorkflow(db, OPERATOR, input);
      }),
    );

  workflow
    .command('edit')
    .description(
      'a new trigger, tag and block; secret, state and cap stay; a Custom URL keeps its headers when no --header is given (its credential headers only while the URL keeps its origin)',
    )
    .requiredOption('--id <id>')
    .requiredOption('--trigger <trigger>', 'lead_created or tag_added')
    .option('--tag <name>')
    .option('--connector <id>')
    .option('--url <url>')
    .option('--send-to-crm <id>')
    .option('--method <method>', 'Custom URL method', 'POST')
    .option('--format <format>', 'Custom URL body format', 'json')
    .option('--header <name=value>', 'Custom URL header (repeatable)', collect, [])
    .option('--field <key=value>', 'block field (repeatable)', collect, [])
    .action((options: WorkflowOptions & { id: string }) =>
      runCommand(({ db }) => {
        const { trigger, tag } = parseTrigger(options);
        const parsed = parseBlock(options);
        const block = parsed.endpoint === 'url' && options.header.length === 0 ? { ...parsed, headers: undefined } : parsed;
        const id = positiveId(options.id, '--id');
        return editWorkflow(db, OPERATOR, id, trigger === 'tag_added' ? { trigger, tagName: parseTagName(tag!, '--tag'), block } : { trigger, block });
      }),
    );

  workflow
    .command('list')
    .requiredOption('--workspace <id>')
    .action((options: { workspace: string }) =>
      runCommand(async ({ db }) => listWorkspaceWorkflows(db, (await requireWorkspace(db, positiveId(options.workspace, '--workspace'))).id)),
    );

  workflow
    .command('deactivate')
    .description('pauses it: events that occur while paused are never sent by it')
    .requiredOption('--id <id>')
    .action((options: { id: string }) => runCommand(({ db }) => switchWorkflow(db, OPERATOR, positiveId(options.id, '--id'), false)));

  workflow
    .command('activate')
    .description('resumes it for events from now on')
    .requiredOption('--id <id>')
    .action((options: { id: string }) => runCommand(({ db }) => switchWorkflow(db, OPERATOR, positiveId(options.id, '--id'), true)));

  workflow
    .command('update')
    .description("the Custom URL block's cap")
    .requiredOption('--id <id>')
    .requiredOption('--max-per-second <n|off>')
    .action((options: { id: string; maxPerSecond: string }) =>
      runCommand(({ db }) => updateWorkflowCap(db, OPERATOR, positiveId(options.id, '--id'), parseMaxPerSecond(options.maxPerSecond, '--max-per-second', { allowOff: true }))),
    );

  workflow
    .command('enable')
    .description('sends to a Custom URL block disabled for sustained failure again')
    .requiredOption('--id <id>')
    .action((options: { id: string }) => runCommand(({ db }) => enableWorkflow(db, OPERATOR, positiveId(options.id, '--id'))));

  workflow
    .command('delete')
    .description('sends nothing more: its pending deliveries, retries included, end Failed unsent')
    .requiredOption('--id <id>')
    .action((options: { id: string }) => runCommand(({ db }) => deleteWorkflow(db, OPERATOR, positiveId(options.id, '--id'))));
}
