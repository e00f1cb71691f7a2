import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type { TestApp } from '../support/app.js';
import { cliError, cliJson } from '../support/cli.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';

// The commands that give the console's actions their CLI side (every console action has one).

const bed = testBed();
let app: TestApp;
let tenant: Tenant;
const cli = <T = any>(args: string[]) => cliJson<T>(app.databaseUrl, args);

beforeAll(() => {
  ({
    t: app,
    tenants: [tenant],
  } = bed);
});

describe("the console's actions in the CLI", () => {
  it('lists members and changes a role', async () => {
    const member = await cli<{ id: number }>(['user', 'create', '--workspace', String(tenant.workspaceId), '--email', 'sam@acme.test', '--role', 'member']);
    expect(await cli(['user', 'update', '--id', String(member.id), '--role', 'admin'])).toEqual({ id: member.id, email: 'sam@acme.test', role: 'admin' });
    const members = await cli<Array<{ id: number; role: string; password_set: boolean; keys: number }>>(['user', 'list', '--workspace', String(tenant.workspaceId)]);
    expect(members.map(({ id, role, password_set, keys }) => ({ id, role, password_set, keys }))).toEqual([
      { id: tenant.userId, role: 'admin', password_set: false, keys: 1 },
      { id: member.id, role: 'admin', password_set: false, keys: 0 },
    ]);
    expect((await cliError(app.databaseUrl, ['user', 'update', '--id', String(member.id), '--role', 'owner'])).message).toBe('--role must be admin or member.');
  });

  it('renames, recolours, archives and restores a tag; a taken name is refused', async () => {
    const tag = await cli<{ id: number }>(['tag', 'create', '--workspace', String(tenant.workspaceId), '--name', 'Hot']);
    await cli(['tag', 'create', '--workspace', String(tenant.workspaceId), '--name', 'Cold']);
    expect(await cli(['tag', 'update', '--id', String(tag.id), '--name', 'Warm', '--color', '#f80', '--archived', 'on'])).toEqual({
      id: tag.id,
      name: 'Warm',
      color: '#f80',
      active: false,
    });
    expect((await cli<Array<{ name: string }>>(['tag', 'list', '--workspace', String(tenant.workspaceId)])).map((row) => row.name)).toEqual(['Cold']);
    expect((await cli<Array<{ name: string }>>(['tag', 'list', '--workspace', String(tenant.workspaceId), '--archived'])).map((row) => row.name)).toEqual(['Cold', 'Warm']);
    expect(await cli(['tag', 'update', '--id', String(tag.id), '--archived', 'off', '--color', 'none'])).toMatchObject({ active: true, color: null });
    expect(await cliError(app.databaseUrl, ['tag', 'update', '--id', String(tag.id), '--name', 'cold'])).toEqual({
      error: 'conflict',
      message: 'The workspace already has a tag named "cold" (names are compared ignoring case).',
    });
  });

  it("creates companies and lists them newest first, a page at a time; the console's refusals in the same words", async () => {
    const workspace = String(tenant.workspaceId);
    const first = await cli<{ id: number }>(['company', 'create', '--workspace', workspace, '--name', 'Initech']);
    const second = await cli<{ id: number }>(['company', 'create', '--workspace', workspace, '--website', 'https://www.umbrella.example']);
    expect(
      (await cli<Array<{ id: number; name: string | null; domain: string | null; status: string }>>(['company', 'list', '--workspace', workspace])).map(
        ({ id, name, domain, status }) => ({ id, name, domain, status }),
      ),
    ).toEqual([
      { id: second.id, name: null, domain: 'umbrella.example', status: 'not_analyzed' },
      { id: first.id, name: 'Initech', domain: null, status: 'not_analyzed' },
    ]);
    expect((await cli<Array<{ id: number }>>(['company', 'list', '--workspace', workspace, '--limit', '1', '--before', String(second.id)])).map((row) => row.id)).toEqual([
      first.id,
    ]);
    expect(await cliError(app.databaseUrl, ['company', 'create', '--workspace', workspace])).toEqual({ error: 'invalid_argument', message: 'Give a name, a website or both.' });
    expect(await cliError(app.databaseUrl, ['company', 'create', '--workspace', workspace, '--website', 'https://umbrella.example/x'])).toEqual({
      error: 'conflict',
      message: 'The workspace already has a company with the domain umbrella.example.',
    });
  });

  it("reveals a connector's signing secret, and edits a workflow keeping its secret, state and stored headers", async () => {
    const connector = await cli<{ id: number; signing_secret: string }>([
      'connector',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--url',
      'https://crm.example.com/hook',
    ]);
    expect(await cli(['connector', 'reveal-secret', '--id', String(connector.id)])).toEqual({ id: connector.id, signing_secret: connector.signing_secret });

    const workflow = await cli<{ id: number; signing_secret: string }>([
      'workflow',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--trigger',
      'lead_created',
      '--url',
      'https://hooks.example.com/a',
      '--header',
      'Authorization=Bearer s3cret',
    ]);
    const edited = await cli([
      'workflow',
      'edit',
      '--id',
      String(workflow.id),
      '--trigger',
      'tag_added',
      '--tag',
      'VIP',
      '--url',
      'https://hooks.example.com/b',
      '--field',
      'who={{lead.name}}',
    ]);
    expect(edited).toMatchObject({
      id: workflow.id,
      trigger: 'tag_added',
      tag: { name: 'VIP' },
      block: { endpoint: 'url', url: 'https://hooks.example.com/b', fields: [{ key: 'who', value: '{{lead.name}}' }] },
    });
    const [listed] = await cli<Array<{ block: { headers: Array<{ key: string; value: string }> }; active: boolean }>>([
      'workflow',
      'list',
      '--workspace',
      String(tenant.workspaceId),
    ]);
    expect(listed!.active).toBe(true);
    expect(listed!.block.headers.map((header) => header.key)).toEqual(['Authorization']);
    const {
      rows: [row],
    } = await sql<{ block: string }>`SELECT block::text FROM workflows WHERE id = ${workflow.id}`.execute(app.ctx.db);
    expect(row!.block).not.toContain('s3cret');
  });
});
