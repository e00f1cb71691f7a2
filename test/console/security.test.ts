import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { addUser, CONSOLE_ORIGIN, countRows, form, http, sessionCookie, sessionFromCookie, signInByLink, startConsoleBed, type ConsoleSession } from './support.js';
import { createApiKey } from '../../src/api-keys/service.js';
import { eventually } from '../support/eventually.js';
import { OPERATOR } from '../../src/audit/service.js';

// The console's web security over HTTP: CSRF tokens, Origin and Sec-Fetch-Site on every
// POST, its own headers, and every page confined to the session's workspace.

let app: TestApp;
let tenant: Tenant;
let other: Tenant;
let admin: ConsoleSession;

beforeAll(async () => {
  ({ app, tenant, other, admin } = await startConsoleBed());
});
afterAll(async () => {
  await app.close();
});

describe("the console's POSTs", () => {
  const createTag = (name: string) => http(app).post('/console/tags').set('Cookie', admin.cookie);

  it('refuse a missing or wrong CSRF token, a foreign Origin, a cross-site fetch and a request that says neither, and change nothing', async () => {
    const before = await countRows(app.ctx.db, 'tags', tenant.workspaceId);
    const refusals = [
      await createTag('a')
        .set('Origin', CONSOLE_ORIGIN)
        .type('form')
        .send(form({ name: 'no-token' })),
      await createTag('b')
        .set('Origin', CONSOLE_ORIGIN)
        .type('form')
        .send(form({ name: 'wrong-token', _csrf: `${admin.csrf.slice(0, -2)}xx` })),
      await createTag('c')
        .set('Origin', 'https://evil.example')
        .type('form')
        .send(form({ name: 'foreign-origin', _csrf: admin.csrf })),
      await createTag('d')
        .set('Sec-Fetch-Site', 'cross-site')
        .type('form')
        .send(form({ name: 'cross-site', _csrf: admin.csrf })),
      await createTag('e')
        .type('form')
        .send(form({ name: 'no-origin', _csrf: admin.csrf })),
    ];
    expect(refusals.map((answer) => answer.status)).toEqual([403, 403, 403, 403, 403]);
    expect(refusals.every((answer) => /nothing was changed/.test(answer.text))).toBe(true);
    expect(await countRows(app.ctx.db, 'tags', tenant.workspaceId)).toBe(before);

    // Text PostgreSQL cannot store is made storable, as the API does: an answer, never a 500.
    expect((await admin.post('/console/tags', { name: 'nul\u0000tag' })).status).toBe(303);
    const accepted = await admin.post('/console/tags', { name: 'accepted' });
    expect(accepted.status).toBe(303);
    expect(await countRows(app.ctx.db, 'tags', tenant.workspaceId)).toBe(before + 2);
  });

  it('take the token of their own session only', async () => {
    const second = await signInByLink(app, tenant.userId);
    const answer = await http(app)
      .post('/console/tags')
      .set('Cookie', admin.cookie)
      .set('Origin', CONSOLE_ORIGIN)
      .type('form')
      .send(form({ name: 'borrowed-token', _csrf: second.csrf }));
    expect(answer.status).toBe(403);
  });
});

describe("the console's pages", () => {
  it('carry a CSP without inline script or style, frame-ancestors none, no-store, and answer unknown pages with HTML', async () => {
    const page = await admin.get('/console/leads');
    expect(page.status).toBe(200);
    const csp = page.headers['content-security-policy'] as string;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(page.headers['cache-control']).toBe('no-store');
    const missing = await admin.get('/console/no-such-page');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toMatch(/^text\/html/);
  });

  it("answer another workspace's ids exactly as missing ones, and change nothing there", async () => {
    const { db } = app.ctx;
    const [connector] = await sql<{ id: number }>`INSERT INTO connectors (workspace_id, url, method, format, auth, mapping, fields, headers, signing_secret)
      VALUES (${other.workspaceId}, 'https://example.com/x', 'POST', 'json', '{"type":"none"}', '[]', '[]', '[]', 'x') RETURNING id::int`
      .execute(db)
      .then((r) => r.rows);
    const [lead] = await sql<{ id: number }>`INSERT INTO leads (workspace_id, name, source) VALUES (${other.workspaceId}, 'Foreign lead', 'api') RETURNING id::int`
      .execute(db)
      .then((r) => r.rows);
    const pages = (id: number | string) => [`/console/connectors/${id}`, `/console/leads/${id}`, `/console/api-keys/${id}/revoke`, `/console/members/${id}/remove`];
    expect((await admin.post(`/console/members/${other.userId}/sign-in-link`)).status).toBe(404);
    const foreignIds = [connector!.id, lead!.id, other.keyId, other.userId];
    for (const [index, foreignId] of foreignIds.entries()) {
      const [theirs, none] = [await admin.get(pages(foreignId)[index]!), await admin.get(pages(999999)[index]!)];
      expect([pages(foreignId)[index], theirs.status]).toEqual([pages(foreignId)[index], 404]);
      // The same words but for the id it names.
      const said = (html: string) => /<p role="alert">([^<]*)<\/p>/.exec(html)?.[1];
      expect(said(theirs.text)?.replace(String(foreignId), 'N')).toBe(said(none.text)?.replace('999999', 'N'));
    }
    const revoke = await admin.post(`/console/api-keys/${other.keyId}/revoke`);
    expect(revoke.status).toBe(404);
    const push = await admin.post(`/console/leads/${lead!.id}/push`, { connector: String(connector!.id) });
    expect(push.status).toBe(404);
    expect(
      await http(app)
        .get('/api/v1/me')
        .set(other.auth)
        .then((answer) => answer.status),
    ).toBe(200);
  });

  it("answer another workspace's deliveries, connector, tag and member as missing from the services scoped to the session's workspace, and change nothing there", async () => {
    const { db } = app.ctx;
    const first = <Row>(query: { execute(db: unknown): Promise<{ rows: Row[] }> }) => query.execute(db).then((result) => result.rows[0]!);
    const connector = await first(sql<{ id: number }>`INSERT INTO connectors (workspace_id, url, method, format, auth, mapping, fields, headers, signing_secret)
      VALUES (${other.workspaceId}, 'https://example.com/x', 'POST', 'json', '{"type":"none"}', '[]', '[]', '[]', 'x') RETURNING id::int`);
    const tag = await first(sql<{ id: number }>`INSERT INTO tags (workspace_id, name) VALUES (${other.workspaceId}, 'Theirs') RETURNING id::int`);
    const delivery = await first(sql<{
      id: number;
    }>`INSERT INTO deliveries (workspace_id, event, sender, trigger, connector_id, message_id, url, method, max_attempts, attempts, branch, finished_at)
      VALUES (${other.workspaceId}, 'lead', 'connector_push', 'push', ${connector.id}, 'msg_theirs', 'https://example.com/x', 'POST', 3, 1, 'Failed', now()) RETURNING id::int`);
    const statuses = [
      (await admin.get(`/console/deliveries/${delivery.id}`)).status,
      (await admin.post(`/console/deliveries/${delivery.id}/replay`)).status,
      (await admin.post('/console/deliveries/recover', { connector: String(connector.id), since: '2000-01-01T00:00' })).status,
      (await admin.post(`/console/connectors/${connector.id}/test`)).status,
      (await admin.post(`/console/tags/${tag.id}`, { name: 'Ours now' })).status,
      (await admin.post(`/console/members/${other.userId}/role`, { role: 'member' })).status,
      (await admin.post(`/console/members/${other.userId}/remove`)).status,
    ];
    expect(statuses).toEqual([404, 404, 404, 404, 404, 404, 404]);
    const after = await first(sql<{ tag: string; role: string; series: number; deliveries: number }>`SELECT
      (SELECT name FROM tags WHERE id = ${tag.id}) AS tag, (SELECT role FROM users WHERE id = ${other.userId}) AS role,
      (SELECT series FROM deliveries WHERE id = ${delivery.id}) AS series, (SELECT count(*)::int FROM deliveries WHERE workspace_id = ${other.workspaceId}) AS deliveries`);
    expect(after).toEqual({ tag: 'Theirs', role: 'admin', series: 1, deliveries: 1 });
  });

  it('let a member read every page and refuse every change with 403, changing nothing', async () => {
    const { addUser } = await import('./support.js');
    const member = await signInByLink(app, (await addUser(app.ctx.db, tenant.workspaceId, 'member')).id);
    for (const path of [
      '/console/',
      '/console/leads',
      '/console/connectors',
      '/console/workflows',
      '/console/deliveries',
      '/console/api-keys',
      '/console/tags',
      '/console/companies',
      '/console/members',
      '/console/password',
    ]) {
      expect([path, (await member.get(path)).status]).toEqual([path, 200]);
    }
    const before = await countRows(app.ctx.db, 'tags', tenant.workspaceId);
    const changes = [
      await member.post('/console/tags', { name: 'by-member' }),
      await member.post(`/console/api-keys/${tenant.keyId}/revoke`),
      await member.post('/console/api-keys', { name: 'member key', scopes: 'leads:read' }),
      await member.post('/console/members', { email: 'new@acme.test', role: 'admin' }),
      await member.post('/console/companies', { name: 'by-member' }),
      await member.post(`/console/members/${tenant.userId}/sign-in-link`),
    ];
    expect(changes.map((answer) => answer.status)).toEqual([403, 403, 403, 403, 403, 403]);
    // Their own password is theirs to set: it changes nothing of the workspace.
    const passwordSet = await member.post('/console/password', { new_password: 'a member password' });
    expect(passwordSet.status).toBe(303);
    expect(await countRows(app.ctx.db, 'tags', tenant.workspaceId)).toBe(before);
    expect(
      await http(app)
        .get('/api/v1/me')
        .set(tenant.auth)
        .then((answer) => answer.status),
    ).toBe(200);
    // Setting the password rotated this browser's session: the old cookie has ended.
    expect((await member.get('/console/leads')).status).toBe(303);
    const rotated = await sessionFromCookie(app, sessionCookie(passwordSet));
    expect((await rotated.post('/console/sign-out')).status).toBe(303);
  });
});

describe('API keys in the console', () => {
  /** A key made with the console's form: its answer, the token shown once in it, and the key's id. */
  async function createdInConsole(name: string, scopes: string[]) {
    const answer = await admin.post('/console/api-keys', { name, scopes });
    const token = /id="new-key-token"[^>]*value="([^"]+)"/.exec(answer.text)?.[1];
    const {
      rows: [key],
    } = await sql<{ id: number }>`SELECT id::int FROM api_keys WHERE name = ${name}`.execute(app.ctx.db);
    return { answer, token, id: key?.id };
  }
  const tagsWith = (token: string | undefined) => http(app).get('/api/v1/tags').set('Authorization', `Bearer ${token}`);

  it('show a new token once, never cached, and a revoked key gets 401 at once', async () => {
    const { answer: created, token, id } = await createdInConsole('Console key', ['leads:read', 'tags:read']);
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(token).toMatch(/^[a-z0-9]+_/);
    expect((await admin.get('/console/api-keys')).text).not.toContain(token);
    expect((await tagsWith(token)).status).toBe(200);

    expect((await admin.post(`/console/api-keys/${id}/revoke`)).status).toBe(303);
    expect((await tagsWith(token)).status).toBe(401);
  });

  it('lets a key created in the console work, and a revoked or orphaned one fail, at once, before the notification of the change is heard', async () => {
    const member = await addUser(app.ctx.db, tenant.workspaceId, 'admin');
    const memberKey = await createApiKey(app.ctx.db, OPERATOR, { workspaceId: tenant.workspaceId, userId: member.id, name: 'Member key', scopes: ['tags:read'], expiresAt: null });
    await eventually(async () => (await tagsWith(memberKey.token)).status === 200, 5_000, 20);
    // The key cache's LISTEN connection stops reading: the notifications of the changes below wait in its socket.
    const listening = (app.ctx.apiKeyCache as unknown as { client: { connection: { stream: { pause(): void; resume(): void } } } }).client.connection.stream;
    listening.pause();
    try {
      const { token, id } = await createdInConsole('Late notice', ['tags:read']);
      expect((await tagsWith(token)).status).toBe(200);
      expect((await admin.post(`/console/api-keys/${id}/revoke`)).status).toBe(303);
      expect((await tagsWith(token)).status).toBe(401);

      // The member's key, cached by its first use: removing the member orphans it.
      expect((await admin.post(`/console/members/${member.id}/remove`)).status).toBe(303);
      expect((await tagsWith(memberKey.token)).status).toBe(401);
    } finally {
      listening.resume();
    }
  });
});
