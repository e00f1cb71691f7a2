import type { Command } from 'commander';
import { listKeys } from '../../api-keys/repository.js';
import { createApiKey, revokeApiKey } from '../../api-keys/service.js';
import { OPERATOR } from '../../audit/service.js';
import { listCompanies } from '../../companies/repository.js';
import { createCompany } from '../../companies/service.js';
import { createTag } from '../../tags/service.js';
import { parseEmail, parseRole } from '../../users/input.js';
import { addMember } from '../../users/service.js';
import { removeMember } from '../../workspaces/members.js';
import { workspaceOfId } from '../../workspaces/owned.js';
import { createDemoWorkspace, createWorkspace, requireWorkspace } from '../../workspaces/service.js';
import { parseScopes } from '../../api-keys/input.js';
import { parseWebsite } from '../../companies/input.js';
import { boundedInteger, nonEmpty, parseTimestamp, positiveId } from '../../input.js';
import { parseTagColour, parseTagName } from '../../tags/input.js';
import { runCommand } from '../cli-context.js';

/** `--scopes a,b`: the list, as the key's scope rule reads it. */
const scopesFlag = (value: string | undefined) =>
  parseScopes(
    (value ?? '')
      .split(',')
      .map((scope) => scope.trim())
      .filter(Boolean),
  );

export function registerCoreCommands(program: Command): void {
  const workspace = program.command('workspace').description('Workspaces');
  workspace
    .command('create')
    .requiredOption('--name <name>')
    .action((options: { name: string }) => runCommand(({ db }) => createWorkspace(db, OPERATOR, nonEmpty(options.name, '--name'))));

  const user = program.command('user').description('Users of a workspace');
  user
    .command('create')
    .requiredOption('--workspace <id>')
    .requiredOption('--email <email>')
    .option('--role <role>', 'admin or member', 'admin')
    .action((options: { workspace: string; email: string; role?: string }) =>
      runCommand(async ({ db }) => {
        const found = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        return addMember(db, OPERATOR, found.id, parseEmail(options.email, '--email'), parseRole(options.role, '--role'));
      }),
    );
  user
    .command('delete')
    .requiredOption('--id <id>')
    .action((options: { id: string }) =>
      runCommand(async ({ db }) => {
        const id = positiveId(options.id, '--id');
        return removeMember(db, OPERATOR, await workspaceOfId(db, 'users', id), id);
      }),
    );

  const key = program.command('key').description('API keys');
  key
    .command('create')
    .requiredOption('--workspace <id>')
    .requiredOption('--user <id>')
    .requiredOption('--name <label>')
    .option('--scopes <list>', 'comma-separated: leads:write,leads:read,tags:read')
    .option('--expires-at <iso>')
    .action((options: { workspace: string; user: string; name: string; scopes?: string; expiresAt?: string }) =>
      runCommand(async ({ db }) => {
        const found = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        return createApiKey(db, OPERATOR, {
          workspaceId: found.id,
          userId: positiveId(options.user, '--user'),
          name: nonEmpty(options.name, '--name'),
          scopes: scopesFlag(options.scopes),
          expiresAt: options.expiresAt === undefined ? null : parseTimestamp(options.expiresAt, '--expires-at'),
        });
      }),
    );
  key
    .command('revoke')
    .requiredOption('--id <id>')
    .action((options: { id: string }) =>
      runCommand(async ({ db }) => {
        const id = positiveId(options.id, '--id');
        const revoked = await revokeApiKey(db, OPERATOR, id, await workspaceOfId(db, 'api_keys', id));
        return { id: revoked.id, revoked: true };
      }),
    );
  key
    .command('list')
    .requiredOption('--workspace <id>')
    .action((options: { workspace: string }) => runCommand(async ({ db }) => listKeys(db, (await requireWorkspace(db, positiveId(options.workspace, '--workspace'))).id)));

  const tag = program.command('tag').description('Tags');
  tag
    .command('create')
    .requiredOption('--workspace <id>')
    .requiredOption('--name <name>')
    .option('--color <color>')
    .option('--archived')
    .action((options: { workspace: string; name: string; color?: string; archived?: boolean }) =>
      runCommand(async ({ db }) => {
        const found = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        return createTag(db, OPERATOR, found.id, {
          name: parseTagName(options.name, '--name'),
          color: options.color ? parseTagColour(options.color, '--color') : null,
          active: !options.archived,
        });
      }),
    );

  const company = program.command('company').description('Companies');
  company
    .command('create')
    .requiredOption('--workspace <id>')
    .option('--name <name>')
    .option('--website <url>')
    .action((options: { workspace: string; name?: string; website?: string }) =>
      runCommand(async ({ db }) => {
        const found = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        const website = options.website === undefined ? null : parseWebsite(options.website, '--website');
        const name = options.name === undefined ? null : nonEmpty(options.name, '--name');
        return createCompany(db, OPERATOR, { workspaceId: found.id, name, website });
      }),
    );
  company
    .command('list')
    .description('newest first')
    .requiredOption('--workspace <id>')
    .option('--limit <n>', 'at most 1000', '100')
    .option('--before <id>', 'older than this company')
    .action((options: { workspace: string; limit: string; before?: string }) =>
      runCommand(async ({ db }) => {
        const found = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        return listCompanies(db, found.id, {
          limit: boundedInteger(options.limit, '--limit', { min: 1, max: 1000 }),
          before: options.before === undefined ? undefined : positiveId(options.before, '--before'),
        });
      }),
    );

  program
    .command('demo')
    .description('Creates a demo workspace, an admin user and a full-scope key')
    .action(() => runCommand(({ db }) => createDemoWorkspace(db, OPERATOR)));
}
