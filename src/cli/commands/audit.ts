import type { Command } from 'commander';
import { AUDIT_PAGE_LIMIT, listAudit } from '../../audit/service.js';
import { requireWorkspace } from '../../workspaces/service.js';
import { boundedInteger, positiveId } from '../../input.js';
import { runCommand } from '../cli-context.js';

export function registerAuditCommands(program: Command): void {
  const audit = program.command('audit').description('The audit log: who changed what, from the console or this CLI');
  audit
    .command('list')
    .description('newest first; --before pages back')
    .requiredOption('--workspace <id>')
    .option('--limit <n>', `at most ${AUDIT_PAGE_LIMIT.max}`, String(AUDIT_PAGE_LIMIT.default))
    .option('--before <id>', 'older than this entry')
    .action((options: { workspace: string; limit: string; before?: string }) =>
      runCommand(async ({ db }) => {
        const limit = boundedInteger(options.limit, '--limit', AUDIT_PAGE_LIMIT);
        const before = options.before === undefined ? undefined : positiveId(options.before, '--before');
        const workspace = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        return listAudit(db, workspace.id, { limit, before });
      }),
    );
}
