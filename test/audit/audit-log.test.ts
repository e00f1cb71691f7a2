import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { AUDIT_ACTIONS, listAudit, type AuditAction } from '../../src/audit/service.js';
import { housekeeping } from '../../src/worker/housekeeping.js';
import { sessionLimitsOf } from '../../src/console-auth/service.js';
import { addUser, sessionCookie, sessionFromCookie, signInByLink, type ConsoleSession } from '../console/support.js';
import { cliError, cliJson } from '../support/cli.js';
import { startTestApp, type TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { cli, LOCAL_DELIVERY_ENV, outboundTestBed } from '../support/outbound.js';

// Every change an admin makes in the console or an operator with the CLI writes one audit entry,
// in its own transaction: who (the user, or the operator), from where (the console's client
// address), what and which object, and never a secret. Each case makes one change as a person
// meets it and reads the workspace's newest entry.

const bed = outboundTestBed([{}]);
let t: TestApp;
let tenant: Tenant;
let admin: ConsoleSession;
const ids: Record<string, number> = {};

interface Case {
  action: AuditAction;
  via: 'console' | 'cli';
  /** Makes the change; the object it changed, and text that must not be in the entry (a secret). */
  run: () => Promise<{ type: string; id: number } & { secret?: string }>;
}

const ok = async (answer: PromiseLike<{ status: number; text: string }>) => {
  const { status, text } = await answer;
  if (status >= 400) throw new Error(`console answered ${status}: ${/<p role="alert">([^<]*)/.exec(text)?.[1] ?? text.slice(0, 200)}`);
  return text;
};
const workspace = () => String(tenant.workspaceId);
/** The tenant's admin, as test/support/fixtures.ts names them. */
const adminEmail = () => `admin${tenant.workspaceId}@acme.test`;
const newest = async (workspaceId = tenant.workspaceId) => (await listAudit(t.ctx.db, workspaceId, { limit: 1 }))[0];
const idOf = async (table: 'connectors' | 'workflows' | 'users' | 'tags' | 'deliveries' | 'api_keys' | 'companies') =>
  (await t.ctx.db.selectFrom(table).where('workspace_id', '=', tenant.workspaceId).select('id').orderBy('id', 'desc').limit(1).executeTakeFirstOrThrow()).id;

const CASES: Case[] = [
  {
    action: 'workspace.created',
    via: 'cli',
    run: async () => {
      const created = await cli<{ id: number }>(t, ['workspace', 'create', '--name', 'Audited']);
      ids.otherWorkspace = created.id;
      return { type: 'workspace', id: created.id };
    },
  },
  {
    action: 'member.added',
    via: 'console',
    run: async () => {
      await ok(admin.post('/console/members', { email: 'new.member@acme.test', role: 'member' }));
      ids.member = await idOf('users');
      return { type: 'user', id: ids.member };
    },
  },
  {
    action: 'sign_in_link.minted',
    via: 'console',
    run: async () => {
      const page = await ok(admin.post(`/console/members/${ids.member}/sign-in-link`));
      return { type: 'user', id: ids.member!, secret: /sign-in\/link#([^"]+)"/.exec(page)![1] };
    },
  },
  {
    action: 'member.role_changed',
    via: 'console',
    run: async () => (await ok(admin.post(`/console/members/${ids.member}/role`, { role: 'admin' })), { type: 'user', id: ids.member! }),
  },
  {
    action: 'password.set',
    via: 'cli',
    run: async () => (
      await cliJson(t.databaseUrl, ['user', 'set-password', '--id', String(ids.member)], LOCAL_DELIVERY_ENV, 'a long enough password 2'),
      { type: 'user', id: ids.member! }
    ),
  },
  {
    action: 'password.set',
    via: 'console',
    run: async () => {
      const answer = await admin.post('/console/password', { new_password: 'a long enough password 1' });
      expect(answer.status).toBe(303);
      // Setting a password ends every session; this browser got a new one.
      admin = await sessionFromCookie(t, sessionCookie(answer));
      return { type: 'user', id: tenant.userId };
    },
  },
  { action: 'member.removed', via: 'console', run: async () => (await ok(admin.post(`/console/members/${ids.member}/remove`)), { type: 'user', id: ids.member! }) },
  {
    action: 'key.created',
    via: 'console',
    run: async () => {
      const page = await ok(admin.post('/console/api-keys', { name: 'Audited key', scopes: 'leads:read' }));
      return { type: 'api_key', id: await idOf('api_keys'), secret: /id="new-key-token"[^>]*value="lk[0-9a-z]{10}_([^"]+)"/.exec(page)![1] };
    },
  },
  {
    action: 'key.revoked',
    via: 'console',
    run: async () => ((ids.key = await idOf('api_keys')), await ok(admin.post(`/console/api-keys/${ids.key}/revoke`)), { type: 'api_key', id: ids.key }),
  },
  {
    action: 'connector.created',
    via: 'console',
    run: async () => {
      await ok(admin.post('/console/connectors', { url: `${bed.receiver.url}/crm`, auth: 'bearer', token: 'crm-token-never-audited' }));
      ids.connector = await idOf('connectors');
      return { type: 'connector', id: ids.connector, secret: 'crm-token-never-audited' };
    },
  },
  {
    action: 'connector.updated',
    via: 'console',
    run: async () => (await ok(admin.post(`/console/connectors/${ids.connector}/update`, { auto_push: 'on', max_per_second: '5' })), { type: 'connector', id: ids.connector! }),
  },
  {
    action: 'connector.enabled',
    via: 'console',
    run: async () => (await ok(admin.post(`/console/connectors/${ids.connector}/enable`)), { type: 'connector', id: ids.connector! }),
  },
  {
    action: 'connector.secret_revealed',
    via: 'console',
    run: async () => {
      const secret = (await t.ctx.db.selectFrom('connectors').where('id', '=', ids.connector!).select('signing_secret').executeTakeFirstOrThrow()).signing_secret;
      await ok(admin.post(`/console/connectors/${ids.connector}/reveal-secret`));
      return { type: 'connector', id: ids.connector!, secret };
    },
  },
  {
    action: 'connector.secret_rotated',
    via: 'cli',
    run: async () => {
      const rotated = await cli<{ signing_secret: string }>(t, ['connector', 'rotate-secret', '--id', String(ids.connector), '--overlap-hours', '1']);
      return { type: 'connector', id: ids.connector!, secret: rotated.signing_secret };
    },
  },
  {
    action: 'delivery.replayed',
    via: 'console',
    run: async () => {
      await ok(admin.post(`/console/connectors/${ids.connector}/test`));
      const delivery = await idOf('deliveries');
      await ok(admin.post(`/console/deliveries/${delivery}/replay`));
      return { type: 'delivery', id: delivery };
    },
  },
  {
    action: 'delivery.recovered',
    via: 'console',
    run: async () => (
      await ok(admin.post('/console/deliveries/recover', { connector: String(ids.connector), since: '2020-01-01T00:00' })),
      { type: 'connector', id: ids.connector! }
    ),
  },
  {
    action: 'workflow.created',
    via: 'console',
    run: async () => {
      await ok(admin.post('/console/workflows', { trigger: 'lead_created', endpoint: 'url', url: `${bed.receiver.url}/hook?token=url-secret-never-audited` }));
      ids.workflow = await idOf('workflows');
      return { type: 'workflow', id: ids.workflow, secret: 'url-secret-never-audited' };
    },
  },
  {
    action: 'workflow.edited',
    via: 'console',
    run: async () => (
      await ok(admin.post(`/console/workflows/${ids.workflow}/edit`, { trigger: 'tag_added', tag: 'VIP', endpoint: 'url', url: '' })),
      { type: 'workflow', id: ids.workflow! }
    ),
  },
  {
    action: 'workflow.deactivated',
    via: 'console',
    run: async () => (await ok(admin.post(`/console/workflows/${ids.workflow}/deactivate`)), { type: 'workflow', id: ids.workflow! }),
  },
  { action: 'workflow.activated', via: 'console', run: async () => (await ok(admin.post(`/console/workflows/${ids.workflow}/activate`)), { type: 'workflow', id: ids.workflow! }) },
  {
    action: 'workflow.updated',
    via: 'console',
    run: async () => (await ok(admin.post(`/console/workflows/${ids.workflow}/cap`, { max_per_second: '3' })), { type: 'workflow', id: ids.workflow! }),
  },
  { action: 'workflow.enabled', via: 'console', run: async () => (await ok(admin.post(`/console/workflows/${ids.workflow}/enable`)), { type: 'workflow', id: ids.workflow! }) },
  { action: 'workflow.deleted', via: 'cli', run: async () => (await cli(t, ['workflow', 'delete', '--id', String(ids.workflow)]), { type: 'workflow', id: ids.workflow! }) },
  {
    action: 'connector.deleted',
    via: 'console',
    run: async () => (await ok(admin.post(`/console/connectors/${ids.connector}/delete`)), { type: 'connector', id: ids.connector! }),
  },
  { action: 'tag.created', via: 'console', run: async () => (await ok(admin.post('/console/tags', { name: 'Audited tag' })), { type: 'tag', id: await idOf('tags') }) },
  {
    action: 'tag.updated',
    via: 'console',
    run: async () => ((ids.tag = await idOf('tags')), await ok(admin.post(`/console/tags/${ids.tag}`, { action: 'archive' })), { type: 'tag', id: ids.tag }),
  },
  {
    action: 'company.created',
    via: 'console',
    run: async () => (await ok(admin.post('/console/companies', { name: 'Audited Inc' })), { type: 'company', id: await idOf('companies') }),
  },
];

beforeAll(async () => {
  ({
    t,
    tenants: [tenant],
  } = bed);
  admin = await signInByLink(t, tenant.userId);
});

describe('the audit log', () => {
  it.each(CASES.map((entry) => [entry.action, entry.via, entry] as const))('records %s through the %s', async (action, via, entry) => {
    const target = await entry.run();
    const workspaceId = action === 'workspace.created' ? target.id : tenant.workspaceId;
    const recorded = await newest(workspaceId);
    expect(recorded).toMatchObject({
      action,
      target: { type: target.type, id: target.id },
      actor: via === 'cli' ? { type: 'operator' } : { type: 'user', id: tenant.userId, email: adminEmail() },
      address: via === 'cli' ? null : expect.stringMatching(/127\.0\.0\.1/),
    });
    if (target.secret !== undefined) expect(JSON.stringify(recorded)).not.toContain(target.secret);
  });

  it('takes the console address from X-Forwarded-For only from a proxy TRUST_PROXY names', async () => {
    await ok(admin.post('/console/tags', { name: 'Direct' }).set('X-Forwarded-For', '203.0.113.7'));
    expect((await newest())!.address).toMatch(/127\.0\.0\.1/);
    const behindProxy = await startTestApp({ env: { TRUST_PROXY: 'loopback' }, sameDatabaseAs: t });
    try {
      const proxied = await sessionFromCookie(behindProxy, admin.cookie);
      await ok(proxied.post('/console/tags', { name: 'Proxied' }).set('X-Forwarded-For', '203.0.113.7'));
      expect((await newest())!.address).toBe('203.0.113.7');
    } finally {
      await behindProxy.close();
    }
  });

  it('names every action in docs/operations.md, and no other', () => {
    const documented = readFileSync('docs/operations.md', 'utf8').split('## Audit log')[1]!.split('\n## ')[0]!;
    const named = new Set([...documented.matchAll(/`([a-z_]+\.[a-z_]+)`/g)].map((match) => match[1]!));
    // Backticked dotted names there that are settings, not actions.
    const settings = /^(audit_log|citus)\./;
    expect([...named].filter((name) => !settings.test(name)).sort()).toEqual([...AUDIT_ACTIONS].sort());
  });

  it('covers every action but the erasure and export (recorded by the lead erasure service)', () => {
    const covered = new Set(CASES.map((entry) => entry.action));
    expect(AUDIT_ACTIONS.filter((action) => !covered.has(action))).toEqual(['lead.erased', 'lead.exported']);
  });

  it('is listed newest first by `audit list`, a page at a time', async () => {
    const all = await listAudit(t.ctx.db, tenant.workspaceId, { limit: 1000 });
    const page = await cli<Array<{ id: number; action: string; actor: unknown }>>(t, ['audit', 'list', '--workspace', workspace(), '--limit', '2', '--before', String(all[0]!.id)]);
    expect(page.map((entry) => entry.id)).toEqual([all[1]!.id, all[2]!.id]);
    expect(page[0]).toMatchObject({ id: all[1]!.id, action: all[1]!.action });
    expect((await cliError(t.databaseUrl, ['audit', 'list', '--workspace', workspace(), '--limit', '0'], LOCAL_DELIVERY_ENV)).error).toBe('invalid_argument');
  });

  it('is a console page for admins, linked from the navigation, with older pages; members are refused it', async () => {
    const overview = await ok(admin.get('/console/'));
    expect(overview).toContain('<a href="/console/audit-log"');
    const page = await ok(admin.get('/console/audit-log'));
    expect(page).toContain('company.created');
    expect(page).toContain(adminEmail());
    const all = await listAudit(t.ctx.db, tenant.workspaceId, { limit: 1000 });
    const oldest = await ok(admin.get(`/console/audit-log?before=${all.at(-2)!.id}`));
    expect(oldest).toContain('Newest entries');
    expect(oldest).not.toContain('company.created');
    expect(oldest).toContain(all.at(-1)!.action);
    const member = await addUser(t.ctx.db, tenant.workspaceId, 'member');
    const memberSession = await signInByLink(t, member.id);
    expect((await memberSession.get('/console/')).text).not.toContain('/console/audit-log');
    const refused = await memberSession.get('/console/audit-log');
    expect(refused.status).toBe(403);
    expect(refused.text).not.toContain('company.created');
  });

  it('refuses UPDATE and DELETE, even for the owner; only the purge deletes, and only entries past AUDIT_RETENTION_DAYS', async () => {
    await expect(sql`UPDATE audit_log SET action = 'key.forged' WHERE workspace_id = ${tenant.workspaceId}`.execute(t.ctx.db)).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(sql`DELETE FROM audit_log WHERE workspace_id = ${tenant.workspaceId}`.execute(t.ctx.db)).rejects.toThrow(/append-only: DELETE refused/);
    await sql`INSERT INTO audit_log (workspace_id, at, actor_kind, action, target_type) VALUES (${tenant.workspaceId}, now() - interval '366 days', 'operator', 'key.created', 'api_key')`.execute(
      t.ctx.db,
    );
    const before = await listAudit(t.ctx.db, tenant.workspaceId, { limit: 1000 });
    await housekeeping(t.ctx.db, 30, sessionLimitsOf(t.ctx.config), 365);
    const after = await listAudit(t.ctx.db, tenant.workspaceId, { limit: 1000 });
    expect(after.length).toBe(before.length - 1);
    expect(after.every((entry) => Date.parse(entry.at) > Date.now() - 365 * 86_400_000)).toBe(true);
  });
});
