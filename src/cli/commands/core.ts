import type { Command } from 'commander';
import { createApiKey, KeyCreationRefused, SCOPES } from '../../api-keys/service.js';
import { listKeys, revokeKey } from '../../api-keys/repository.js';
import { insertCompany } from '../../companies/repository.js';
import { domainOfUrl } from '../../leads/normalize.js';
import { insertTag } from '../../tags/repository.js';
import { deleteUser, insertUser, type Role } from '../../users/repository.js';
import { insertWorkspace } from '../../workspaces/repository.js';
import type { Executor } from '../../db/connect.js';
import { CliError, nonEmpty, positiveId, requireWorkspace } from '../cli-error.js';
import type { Runner } from '../main.js';
import type { components } from '../../../generated/api.js';

type Scope = components['schemas']['Scope'];


function parseScopes(value: string | undefined): Scope[] {
  if (value === undefined) return [];
  const scopes = value.split(',').map((scope) => scope.trim()).filter(Boolean);
  const unknown = scopes.filter((scope) => !SCOPES.includes(scope as Scope));
  if (unknown.length > 0) throw new CliError('invalid_argument', `Unknown scope(s): ${unknown.join(', ')}. Allowed: ${SCOPES.join(', ')}.`);
  return [...new Set(scopes)] as Scope[];
}

function parseExpiry(value: string | undefined): string | null {
  if (value === undefined) return null;
  const time = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time)) throw new CliError('invalid_argument', `--expires-at must be an ISO-8601 timestamp, got "${value}".`);
  return new Date(time).toISOString();
}

function parseEmail(value: string): string {
  const email = value.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) throw new CliError('invalid_argument', `--email must be an email address, got "${value}".`);
  return email;
}

function parseRole(value: string | undefined): Role {
  if (value === undefined) return 'admin';
  if (value !== 'admin' && value !== 'member') throw new CliError('invalid_argument', '--role must be admin or member.');
  return value;
}

function parseWebsite(value: string): string {
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `https://${value}`);
  } catch {
    throw new CliError('invalid_argument', `--website must be a URL, got "${value}".`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError('invalid_argument', '--website must be an http or https URL.');
  return url.toString();
}

async function createKey(db: Executor, input: { workspaceId: number; userId: number; name: string; scopes: Scope[]; expiresAt: string | null }) {
  try {
    return await createApiKey(db, input);
  } catch (error) {
    if (error instanceof KeyCreationRefused) throw new CliError(error.code, error.message);
    throw error;
  }
}

export function registerCoreCommands(program: Command, run: Runner): void {
  const workspace = program.command('workspace').description('Workspaces');
  workspace.command('create').requiredOption('--name <name>')
    .action((options: { name: string }) => run(({ db }) => insertWorkspace(db, nonEmpty(options.name, '--name'))));

  const user = program.command('user').description('Users of a workspace');
  user.command('create').requiredOption('--workspace <id>').requiredOption('--email <email>').option('--role <role>', 'admin or member', 'admin')
    .action((options: { workspace: string; email: string; role?: string }) => run(async ({ db }) => {
      const found = await requireWorkspace(db, options.workspace);
      return insertUser(db, { workspace_id: found.id, email: parseEmail(options.email), role: parseRole(options.role) });
    }));
  user.command('delete').requiredOption('--id <id>')
    .action((options: { id: string }) => run(async ({ db }) => {
      const deleted = await deleteUser(db, positiveId(options.id, '--id'));
      if (!deleted) throw new CliError('not_found', `User ${options.id} does not exist.`);
      return { id: deleted.id, deleted: true };
    }));

  const key = program.command('key').description('API keys');
  key.command('create').requiredOption('--workspace <id>').requiredOption('--user <id>').requiredOption('--name <label>')
    .option('--scopes <list>', 'comma-separated: leads:write,leads:read,tags:read').option('--expires-at <iso>')
    .action((options: { workspace: string; user: string; name: string; scopes?: string; expiresAt?: string }) => run(async ({ db }) => {
      const found = await requireWorkspace(db, options.workspace);
      return createKey(db, {
        workspaceId: found.id,
        userId: positiveId(options.user, '--user'),
        name: nonEmpty(options.name, '--name'),
        scopes: parseScopes(options.scopes),
        expiresAt: parseExpiry(options.expiresAt),
      });
    }));
  key.command('revoke').requiredOption('--id <id>')
    .action((options: { id: string }) => run(async ({ db }) => {
      const revoked = await revokeKey(db, positiveId(options.id, '--id'));
      if (!revoked) throw new CliError('not_found', `API key ${options.id} does not exist.`);
      return { id: revoked.id, revoked: true };
    }));
  key.command('list').requiredOption('--workspace <id>')
    .action((options: { workspace: string }) => run(async ({ db }) => listKeys(db, (await requireWorkspace(db, options.workspace)).id)));

  const tag = program.command('tag').description('Tags');
  tag.command('create').requiredOption('--workspace <id>').requiredOption('--name <name>').option('--color <color>').option('--archived')
    .action((options: { workspace: string; name: string; color?: string; archived?: boolean }) => run(async ({ db }) => {
      const found = await requireWorkspace(db, options.workspace);
      return insertTag(db, { workspace_id: found.id, name: nonEmpty(options.name, '--name'), color: options.color ? nonEmpty(options.color, '--color', 32) : null, active: !options.archived });
    }));

  const company = program.command('company').description('Companies');
  company.command('create').requiredOption('--workspace <id>').option('--name <name>').option('--website <url>')
    .action((options: { workspace: string; name?: string; website?: string }) => run(async ({ db }) => {
      const found = await requireWorkspace(db, options.workspace);
      const website = options.website === undefined ? null : parseWebsite(options.website);
      const name = options.name === undefined ? null : nonEmpty(options.name, '--name');
      if (!name && !website) throw new CliError('invalid_argument', 'Give --name, --website or both.');
      const created = await insertCompany(db, {
        workspace_id: found.id,
        name,
        domain: website ? domainOfUrl(website) : null,
        status: 'not_analyzed',
        links: website ? [{ type: 'website', url: website }] : [],
      });
      return { id: created.id, name: created.name, website };
    }));

  program.command('demo').description('Creates a demo workspace, an admin user and a full-scope key')
    .action(() => run(async ({ db }) => db.transaction().execute(async (trx) => {
      const demoWorkspace = await insertWorkspace(trx, 'Demo workspace');
      const demoUser = await insertUser(trx, { workspace_id: demoWorkspace.id, email: `admin+${demoWorkspace.id}@demo.example`, role: 'admin' });
      const demoKey = await createKey(trx, { workspaceId: demoWorkspace.id, userId: demoUser.id, name: 'Demo key', scopes: [...SCOPES], expiresAt: null });
      return { workspace: demoWorkspace, user: demoUser, key: demoKey };
    })));
}
