import type { Command } from 'commander';
import { OPERATOR } from '../../audit/service.js';
import { revealSigningSecret } from '../../connectors/signing-secret.js';
import { listTags } from '../../tags/repository.js';
import { updateTag } from '../../tags/service.js';
import { parseRole } from '../../users/input.js';
import { listWorkspaceMembers } from '../../users/service.js';
import { changeRole } from '../../workspaces/members.js';
import { workspaceOfId } from '../../workspaces/owned.js';
import { requireWorkspace } from '../../workspaces/service.js';
import { parseBoolean, positiveId } from '../../input.js';
import { parseTagColour, parseTagName } from '../../tags/input.js';
import { runCommand } from '../cli-context.js';

export const group = (program: Command, name: string) => program.commands.find((command) => command.name() === name) ?? program.command(name);

/**
 * The CLI side of what the console's Members, Tags and Connectors pages do, so every console
 * action has its command (added to the nouns core.ts and connectors.ts define).
 */
export function registerWorkspaceAdminCommands(program: Command): void {
  const user = group(program, 'user');
  user
    .command('list')
    .requiredOption('--workspace <id>')
    .action((options: { workspace: string }) =>
      runCommand(async ({ db }) => listWorkspaceMembers(db, (await requireWorkspace(db, positiveId(options.workspace, '--workspace'))).id)),
    );
  user
    .command('update')
    .requiredOption('--id <id>')
    .requiredOption('--role <role>', 'admin or member')
    .action((options: { id: string; role: string }) =>
      runCommand(async ({ db }) => {
        const [id, role] = [positiveId(options.id, '--id'), parseRole(options.role, '--role')];
        return changeRole(db, OPERATOR, await workspaceOfId(db, 'users', id), id, role);
      }),
    );

  const tag = group(program, 'tag');
  tag
    .command('list')
    .requiredOption('--workspace <id>')
    .option('--archived', 'archived tags too')
    .action((options: { workspace: string; archived?: boolean }) =>
      runCommand(async ({ db }) => listTags(db, (await requireWorkspace(db, positiveId(options.workspace, '--workspace'))).id, options.archived === true)),
    );
  tag
    .command('update')
    .requiredOption('--id <id>')
    .option('--name <name>')
    .option('--color <color>', 'a colour, or "none" to clear it')
    .option('--archived <on|off>', 'archive (on) or restore (off)')
    .action((options: { id: string; name?: string; color?: string; archived?: string }) =>
      runCommand(async ({ db }) => {
        const id = positiveId(options.id, '--id');
        const changes = {
          name: options.name === undefined ? undefined : parseTagName(options.name, '--name'),
          color: options.color === undefined ? undefined : options.color.trim().toLowerCase() === 'none' ? null : parseTagColour(options.color, '--color'),
          active: options.archived === undefined ? undefined : !parseBoolean(options.archived, '--archived'),
        };
        return updateTag(db, OPERATOR, id, changes, await workspaceOfId(db, 'tags', id));
      }),
    );

  group(program, 'connector')
    .command('reveal-secret')
    .description('the signing secret receivers verify with')
    .requiredOption('--id <id>')
    .action((options: { id: string }) => runCommand(({ db }) => revealSigningSecret(db, OPERATOR, positiveId(options.id, '--id'))));
}
