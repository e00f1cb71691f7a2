import { beforeAll, describe, expect, it } from '@jest/globals';
import { findConnectorsAcrossWorkspaces } from '../../src/connectors/repository.js';
import { cliError, cliJson, runCli } from '../support/cli.js';
import { eventually } from '../support/eventually.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';

const bed = testBed({ tenants: [] });
let t: TestApp;
beforeAll(() => {
  ({ t } = bed);
});

const ok = (args: string[]) => cliJson<Record<string, unknown>>(t.databaseUrl, args);

async function refused(args: string[], code: string) {
  expect(await cliError(t.databaseUrl, args)).toEqual({ error: code, message: expect.any(String) });
}

describe('admin CLI', () => {
  it('creates a workspace, users and keys that authenticate against the API', async () => {
    const workspace = await ok(['workspace', 'create', '--name', 'Northwind']);
    expect(workspace).toEqual({ id: expect.any(Number), name: 'Northwind' });
    const admin = await ok(['user', 'create', '--workspace', String(workspace.id), '--email', 'Ops@Northwind.test']);
    expect(admin).toEqual({ id: expect.any(Number), email: 'ops@northwind.test', role: 'admin' });

    const key = await ok(['key', 'create', '--workspace', String(workspace.id), '--user', String(admin.id), '--name', 'Zapier', '--scopes', 'leads:read,tags:read']);
    expect(key).toEqual({
      id: expect.any(Number),
      name: 'Zapier',
      prefix: expect.stringMatching(/^lk[0-9a-z]{10}$/),
      scopes: ['leads:read', 'tags:read'],
      expires_at: null,
      token: expect.stringMatching(/^lk[0-9a-z]{10}_/),
    });
    const me = await t.http.get('/api/v1/me').set('Authorization', `Bearer ${key.token as string}`);
    expect(me.status).toBe(200);
    expect(me.body.data.workspace).toEqual({ id: workspace.id, name: 'Northwind' });

    const listed = await cliJson<Array<Record<string, unknown>>>(t.databaseUrl, ['key', 'list', '--workspace', String(workspace.id)]);
    expect(listed).toHaveLength(1);
    expect(listed[0]).not.toHaveProperty('token');
    expect(listed[0]).not.toHaveProperty('token_hash');

    expect(await ok(['key', 'revoke', '--id', String(key.id)])).toEqual({ id: key.id, revoked: true });
    // The app hears of the revocation through NOTIFY, a moment after the CLI's commit.
    await eventually(async () => (await t.http.get('/api/v1/me').set('Authorization', `Bearer ${key.token as string}`)).status === 401, 15_000);
  });

  it('creates a key with no scopes that can call only /me, and orphans keys of a deleted user', async () => {
    const workspace = await ok(['workspace', 'create', '--name', 'Scopeless']);
    const admin = await ok(['user', 'create', '--workspace', String(workspace.id), '--email', 'a@scopeless.test', '--role', 'admin']);
    const key = await ok(['key', 'create', '--workspace', String(workspace.id), '--user', String(admin.id), '--name', 'Bare', '--expires-at', '2099-01-01T00:00:00Z']);
    expect(key.scopes).toEqual([]);
    expect(key.expires_at).toBe('2099-01-01T00:00:00.000000Z');
    const auth = { Authorization: `Bearer ${key.token as string}` };
    expect((await t.http.get('/api/v1/me').set(auth)).status).toBe(200);
    expect((await t.http.get('/api/v1/tags').set(auth)).status).toBe(403);

    expect(await ok(['user', 'delete', '--id', String(admin.id)])).toEqual({ id: admin.id, deleted: true });
    await eventually(async () => (await t.http.get('/api/v1/me').set(auth)).status === 401, 15_000);
    expect((await t.http.get('/api/v1/me').set(auth)).body).toEqual({
      error: 'invalid_api_key',
      message: 'The API key is orphaned: the user who created it no longer exists or no longer holds the update-companies permission. Create a new key.',
      documentation_url: t.ctx.config.DOCUMENTATION_URL,
    });
  });

  it('refuses key creation for a member or a user of another workspace', async () => {
    const first = await ok(['workspace', 'create', '--name', 'First']);
    const second = await ok(['workspace', 'create', '--name', 'Second']);
    const member = await ok(['user', 'create', '--workspace', String(first.id), '--email', 'm@first.test', '--role', 'member']);
    expect(member.role).toBe('member');
    const outsider = await ok(['user', 'create', '--workspace', String(second.id), '--email', 'o@second.test']);
    await refused(['key', 'create', '--workspace', String(first.id), '--user', String(member.id), '--name', 'x'], 'permission_denied');
    await refused(['key', 'create', '--workspace', String(first.id), '--user', String(outsider.id), '--name', 'x'], 'user_not_in_workspace');
  });

  it('creates tags and companies', async () => {
    const workspace = await ok(['workspace', 'create', '--name', 'Tagged']);
    expect(await ok(['tag', 'create', '--workspace', String(workspace.id), '--name', 'VIP', '--color', '#ff0000'])).toEqual({
      id: expect.any(Number),
      name: 'VIP',
      color: '#ff0000',
      active: true,
    });
    expect(await ok(['tag', 'create', '--workspace', String(workspace.id), '--name', 'Old', '--archived'])).toMatchObject({ name: 'Old', color: null, active: false });
    expect(await ok(['company', 'create', '--workspace', String(workspace.id), '--name', 'Globex', '--website', 'https://globex.test'])).toEqual({
      id: expect.any(Number),
      name: 'Globex',
      website: 'https://globex.test/',
    });
  });

  it('prints a demo workspace with a full-scope key', async () => {
    const demo = (await ok(['demo'])) as { workspace: { id: number }; user: { id: number }; key: { token: string; scopes: string[] } };
    expect(demo.key.scopes).toEqual(['leads:write', 'leads:read', 'tags:read']);
    const me = await t.http.get('/api/v1/me').set('Authorization', `Bearer ${demo.key.token}`);
    expect(me.body.data.workspace.id).toBe(demo.workspace.id);
  });

  // Eleven CLI processes, each a node start-up: a loaded machine needs more than the default 30 s.
  it('refuses bad input with a JSON error on stderr and a non-zero exit', async () => {
    // A workspace and user of this test's own: ids are not 1 on a database other tests used first.
    const workspace = String((await ok(['workspace', 'create', '--name', 'Refusals'])).id);
    const user = String((await ok(['user', 'create', '--workspace', workspace, '--email', 'refusals@acme.test'])).id);
    await refused(['workspace', 'create'], 'invalid_arguments');
    await refused(['workspace', 'create', '--name', '   '], 'invalid_argument');
    await refused(['user', 'create', '--workspace', 'abc', '--email', 'a@b.test'], 'invalid_argument');
    await refused(['user', 'create', '--workspace', '999999', '--email', 'a@b.test'], 'not_found');
    await refused(['user', 'create', '--workspace', workspace, '--email', 'not-an-email'], 'invalid_argument');
    await refused(['user', 'create', '--workspace', workspace, '--email', 'REFUSALS@acme.test'], 'conflict');
    await refused(['key', 'create', '--workspace', workspace, '--user', user, '--name', 'x', '--scopes', 'leads:delete'], 'invalid_argument');
    await refused(['key', 'revoke', '--id', '999999'], 'not_found');
    await refused(['nonsense'], 'invalid_arguments');
  }, 90_000);
});

describe('connector secrets', () => {
  let workspace: string;
  beforeAll(async () => {
    workspace = String((await ok(['workspace', 'create', '--name', 'Secrets'])).id);
  });
  const create = (auth: string[]) => ['connector', 'create', '--workspace', workspace, '--url', 'https://crm.example.com/hook', ...auth];
  const storedAuth = async (id: unknown) => (await findConnectorsAcrossWorkspaces(t.ctx.db, [id as number])).get(id as number)!.auth;

  it('reads a secret from standard input with `-`, or from its environment variable, and says nothing on stderr', async () => {
    const fromStdin = await cliJson(t.databaseUrl, create(['--auth', 'bearer', '--token', '-']), {}, 'tok_stdin_0123456789\n');
    expect(await storedAuth(fromStdin.id)).toEqual({ type: 'bearer', token: 'tok_stdin_0123456789' });
    const header = await cliJson(t.databaseUrl, create(['--auth', 'header', '--header-name', 'X-Api-Key', '--header-value', '-']), {}, 'hv stdin, spaces kept ');
    expect(await storedAuth(header.id)).toEqual({ type: 'header', name: 'X-Api-Key', value: 'hv stdin, spaces kept ' });

    const env = { LEAD_INTAKE_CONNECTOR_TOKEN: 'tok_env_abcdef', LEAD_INTAKE_CONNECTOR_PASSWORD: 'pw_env_abcdef', LEAD_INTAKE_CONNECTOR_HEADER_VALUE: 'hv_env_abcdef' };
    const fromEnv = async (auth: string[]) => storedAuth((await cliJson(t.databaseUrl, create(auth), env)).id);
    expect(await fromEnv(['--auth', 'bearer'])).toEqual({ type: 'bearer', token: 'tok_env_abcdef' });
    expect(await fromEnv(['--auth', 'basic', '--username', 'crm'])).toEqual({ type: 'basic', username: 'crm', password: 'pw_env_abcdef' });
    expect(await fromEnv(['--auth', 'header', '--header-name', 'X-Key'])).toEqual({ type: 'header', name: 'X-Key', value: 'hv_env_abcdef' });
    // The flag, when given, wins over the environment.
    const both = await cliJson(t.databaseUrl, create(['--auth', 'bearer', '--token', '-']), env, 'tok_stdin_wins');
    expect(await storedAuth(both.id)).toEqual({ type: 'bearer', token: 'tok_stdin_wins' });
  }, 90_000);

  it('still takes --token, --password and --header-value on the command line, with one JSON warning each on stderr', async () => {
    const result = await runCli(create(['--auth', 'header', '--header-name', 'X-Key', '--header-value', 'hv_flag_1', '--token', 'unused_flag_2', '--password', 'unused_flag_3']), {
      DATABASE_URL: t.databaseUrl,
      LOG_LEVEL: 'warn',
    });
    expect(result.code).toBe(0);
    expect(await storedAuth((result.json as { id: number }).id)).toEqual({ type: 'header', name: 'X-Key', value: 'hv_flag_1' });
    const warnings = result.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(warnings).toEqual(
      ['--token', '--password', '--header-value'].map((flag) => ({
        warning: 'secret_on_command_line',
        message: expect.stringMatching(
          new RegExp(`^${flag} on the command line is visible .*\\(ps\\).*shell history; \`${flag} -\` reads it from standard input, or set LEAD_INTAKE_CONNECTOR_`),
        ),
      })),
    );
    expect(result.stderr).not.toMatch(/hv_flag_1|unused_flag_2|unused_flag_3/);
  });

  it('refuses a missing secret naming every way to give it, two secrets from standard input, and an empty one', async () => {
    expect(await cliError(t.databaseUrl, create(['--auth', 'bearer']))).toEqual({
      error: 'invalid_argument',
      message: '--auth bearer needs --token (`--token -` reads it from standard input, or set LEAD_INTAKE_CONNECTOR_TOKEN).',
    });
    expect(await cliError(t.databaseUrl, create(['--auth', 'basic', '--username', 'u', '--password', '-', '--token', '-']), {}, 'x')).toEqual({
      error: 'invalid_argument',
      message: expect.stringMatching(/^Only one secret can come from standard input, not --token and --password/),
    });
    expect(await cliError(t.databaseUrl, create(['--auth', 'header', '--header-name', 'X-Key', '--header-value', '-']), {}, '\n')).toMatchObject({
      error: 'invalid_argument',
      message: expect.stringMatching(/^--auth header needs --header-value/),
    });
  }, 60_000);
});
