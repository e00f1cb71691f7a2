import type { Command } from 'commander';
import { listDeliveries } from '../../deliveries/repository.js';
import { recoverDeliveries, replayDelivery, showDelivery } from '../../deliveries/service.js';
import { OPERATOR } from '../../audit/service.js';
import { requireWorkspace } from '../../workspaces/service.js';
import { parseBranch, parseTimeWindow } from '../../deliveries/input.js';
import { boundedInteger, parseTimestamp, positiveId } from '../../input.js';
import { workspaceOfId } from '../../workspaces/owned.js';
import { exactlyOne } from '../arguments.js';
import { runCommand } from '../cli-context.js';

interface ListOptions {
  workspace: string;
  lead?: string;
  branch?: string;
  since?: string;
  limit?: string;
}

interface RecoverOptions {
  connector?: string;
  workflow?: string;
  since: string;
  until?: string;
}

const LIMIT = { min: 1, max: 1000 };

export function registerDeliveryCommands(program: Command): void {
  const deliveries = program.command('deliveries').description('Webhook deliveries and their attempts');
  deliveries
    .command('list')
    .description('oldest first (by id); --limit keeps the newest')
    .requiredOption('--workspace <id>')
    .option('--lead <id>')
    .option('--branch <branch>', 'pending, Delivered or Failed')
    .option('--since <iso>', 'created at or after')
    .option('--limit <n>', `only the newest this many, ${LIMIT.min} to ${LIMIT.max} (default: all)`)
    .action((options: ListOptions) =>
      runCommand(async ({ db }) => {
        const filter = {
          leadId: options.lead === undefined ? undefined : positiveId(options.lead, '--lead'),
          branch: options.branch === undefined ? undefined : parseBranch(options.branch),
          since: options.since === undefined ? undefined : parseTimestamp(options.since, '--since'),
          limit: options.limit === undefined ? undefined : boundedInteger(options.limit, '--limit', LIMIT),
        };
        const workspace = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        return listDeliveries(db, workspace.id, filter);
      }),
    );

  deliveries
    .command('show')
    .description('the request as sent (credentials masked) and every attempt')
    .requiredOption('--id <id>')
    .action((options: { id: string }) =>
      runCommand(async ({ db }) => {
        const id = positiveId(options.id, '--id');
        return showDelivery(db, id, await workspaceOfId(db, 'deliveries', id));
      }),
    );

  deliveries
    .command('replay')
    .description('sends a finished delivery again under the same webhook-id')
    .requiredOption('--id <id>')
    .action((options: { id: string }) =>
      runCommand(async ({ db }) => {
        const id = positiveId(options.id, '--id');
        return replayDelivery(db, OPERATOR, id, await workspaceOfId(db, 'deliveries', id));
      }),
    );

  deliveries
    .command('recover')
    .description('sends again every delivery of a connector or workflow that ended Failed in the window, once')
    .option('--connector <id>')
    .option('--workflow <id>')
    .requiredOption('--since <iso>', 'ended Failed at or after')
    .option('--until <iso>', 'ended Failed at or before (default: now)')
    .action((options: RecoverOptions) =>
      runCommand(async ({ db }) => {
        const [flag, value] = exactlyOne(options, { connector: '--connector', workflow: '--workflow' });
        const id = positiveId(value, `--${flag}`);
        const window = parseTimeWindow(options.since, options.until);
        const workspaceId = await workspaceOfId(db, flag === 'connector' ? 'connectors' : 'workflows', id);
        return recoverDeliveries(db, OPERATOR, flag === 'connector' ? { connectorId: id } : { workflowId: id }, window, workspaceId);
      }),
    );
}
