import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { createApiKey } from '../../src/api-keys/service.js';
import { SIGN_IN_THROTTLED, THROTTLE } from '../../src/console-auth/throttle.js';
import { createConnector } from '../../src/connectors/service.js';
import { createWorkflow } from '../../src/workflows/service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { eventually } from '../support/eventually.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { addUser, CONSOLE_ORIGIN, form, http, linkToken, passwordSignIn, sessionCookie, sessionFromCookie, signInByLink, type ConsoleSession } from './support.js';
import { OPERATOR } from '../../src/audit/service.js';

// The console's sign-in and sessions against someone who tries: guesses in parallel, a stolen
// cookie after a password change, a demoted admin's keys, secrets on every role's first page,
// forms the parser cannot read.

const bed = testBed();
let app: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t: app,
    tenants: [tenant],
  } = bed);
});

const clearFailures = () => sql`DELETE FROM console_sign_in_failures`.execute(app.ctx.db);

const signedInWith = async (email: string, password: string): Promise<ConsoleSession> => {
  const answer = await passwordSignIn(app, email, password);
  expect(answer.status).toBe(303);
  return sessionFromCookie(app, sessionCookie(answer));
};

const stillSignedIn = async (session: ConsoleSession) => (await session.get('/console/leads')).status === 200;

describe('password guessing', () => {
  it('gives 30 parallel wrong passwords for one account at most 10 credential checks; the rest are refused with 429', async () => {
    await clearFailures();
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'admin', 'the right password');
    const answers = await Promise.all(Array.from({ length: 30 }, (_, guess) => passwordSignIn(app, user.email, `wrong guess ${guess}`)));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(THROTTLE.email.refuseAfter);
    expect(statuses.filter((status) => status === 429)).toHaveLength(30 - THROTTLE.email.refuseAfter);
    expect(answers.find((answer) => answer.status === 429)!.text).toContain(SIGN_IN_THROTTLED);
    await clearFailures();
  }, 60_000);

  it('lets a sign-in link lift the lock wrong passwords put on an email', async () => {
    await clearFailures();
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'admin', 'the right password');
    await sql`INSERT INTO console_sign_in_failures (subject) SELECT ${`email:${user.email}`} FROM generate_series(1, ${THROTTLE.email.refuseAfter})`.execute(app.ctx.db);
    expect((await passwordSignIn(app, user.email, 'the right password')).status).toBe(429);
    await signInByLink(app, user.id);
    expect((await passwordSignIn(app, user.email, 'the right password')).status).toBe(303);
  });

  it('counts an IPv6 client by its /64 behind a trusted proxy', async () => {
    const proxied = await startTestApp({ env: { TRUST_PROXY: 'loopback' }, sameDatabaseAs: app });
    try {
      await clearFailures();
      const from = (address: string, email: string) =>
        http(proxied)
          .post('/console/sign-in')
          .set('Origin', CONSOLE_ORIGIN)
          .set('X-Forwarded-For', address)
          .type('form')
          .send(form({ email, password: 'wrong password' }));
      expect((await from('2001:db8:1:2::1', 'someone@acme.test')).status).toBe(401);
      const { rows } = await sql<{ subject: string }>`SELECT subject FROM console_sign_in_failures WHERE subject LIKE 'address:%'`.execute(app.ctx.db);
      expect(rows.map((row) => row.subject)).toEqual(['address:2001:db8:1:2::/64']);
      await sql`INSERT INTO console_sign_in_failures (subject) SELECT 'address:2001:db8:1:2::/64' FROM generate_series(2, ${THROTTLE.address.refuseAfter})`.execute(app.ctx.db);
      expect((await from('2001:db8:1:2:ffff:ffff:ffff:fffe', 'another@acme.test')).status).toBe(429);
      expect((await from('2001:db8:1:3::1', 'another@acme.test')).status).toBe(401);
    } finally {
      await proxied.close();
      await clearFailures();
    }
  });
});

describe('sessions', () => {
  it("end everywhere else when the password changes: another browser's session is signed out, this one rotated", async () => {
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'member', 'the first password');
    const here = await signedInWith(user.email, 'the first password');
    const elsewhere = await signedInWith(user.email, 'the first password');
    expect(await stillSignedIn(elsewhere)).toBe(true);

    const changed = await here.post('/console/password', { current_password: 'the first password', new_password: 'the second password' });
    expect([changed.status, changed.headers.location]).toEqual([303, '/console/password?notice=password-set']);
    expect(await stillSignedIn(elsewhere)).toBe(false);
    expect(await stillSignedIn(here)).toBe(false);
    expect(await stillSignedIn(await sessionFromCookie(app, sessionCookie(changed)))).toBe(true);

    // `user set-password` ends every session too.
    const another = await signedInWith(user.email, 'the second password');
    await runCli(['user', 'set-password', '--id', String(user.id)], { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' }, 'the third password\n');
    expect(await stillSignedIn(another)).toBe(false);
  });

  it("end the browser's previous session when it signs in again", async () => {
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'member', 'the password here');
    const first = await signedInWith(user.email, 'the password here');
    const again = await http(app)
      .post('/console/sign-in')
      .set('Origin', CONSOLE_ORIGIN)
      .set('Cookie', first.cookie)
      .type('form')
      .send(form({ email: user.email, password: 'the password here' }));
    expect(again.status).toBe(303);
    expect(await stillSignedIn(first)).toBe(false);
    expect(await stillSignedIn(await sessionFromCookie(app, sessionCookie(again)))).toBe(true);
  });

  it('are listed under Your password, and Sign out everywhere ends them all', async () => {
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'member', 'the password here');
    const here = await signedInWith(user.email, 'the password here');
    const elsewhere = await signedInWith(user.email, 'the password here');
    const page = await here.get('/console/password');
    expect(page.text).toContain('<h2>Sessions</h2>');
    expect(page.text.match(/<tr>\s*<td>/g)).toHaveLength(2);
    expect(page.text).toContain('this browser');
    expect(page.text).toContain('Sign out everywhere');
    const out = await here.post('/console/password/sign-out-everywhere');
    expect([out.status, out.headers.location]).toEqual([303, '/console/sign-in']);
    expect([await stillSignedIn(here), await stillSignedIn(elsewhere)]).toEqual([false, false]);
  });

  it("end when the role changes, and a demoted admin's key gets 401 within a second, as an orphaned key", async () => {
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'admin');
    const session = await signInByLink(app, user.id);
    const key = await createApiKey(app.ctx.db, OPERATOR, { workspaceId: tenant.workspaceId, userId: user.id, name: 'Demoted key', scopes: ['tags:read'], expiresAt: null });
    const me = () => http(app).get('/api/v1/me').set('Authorization', `Bearer ${key.token}`);
    await eventually(async () => (await me()).status === 200, 5_000, 20);
    expect((await me()).status).toBe(200);

    // Another process (the CLI) demotes them: this one hears it as it hears of orphaned keys.
    const demoted = await runCli(['user', 'update', '--id', String(user.id), '--role', 'member'], { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' });
    expect(demoted.code).toBe(0);
    const started = Date.now();
    await eventually(async () => (await me()).status === 401, 1_000, 10);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect((await me()).body).toMatchObject({
      error: 'invalid_api_key',
      message: 'The API key is orphaned: the user who created it no longer exists or no longer holds the update-companies permission. Create a new key.',
    });
    expect(await stillSignedIn(session)).toBe(false);
    // The API keys page says so too.
    const keysPage = (await (await signInByLink(app, tenant.userId)).get('/console/api-keys')).text;
    expect(keysPage).toMatch(/<td>Demoted key<\/td>(?:(?!<\/tr>)[\s\S])*>orphaned</);
  });
});

describe('sign-in links', () => {
  it('replace earlier unused ones, record who minted them, and are not minted by an admin for another admin', async () => {
    const member = await addUser(app.ctx.db, tenant.workspaceId, 'member');
    const earlier = await linkToken(app.ctx.db, member.id);
    const later = await linkToken(app.ctx.db, member.id);
    const redeem = (token: string) => http(app).post('/console/sign-in/link').set('Origin', CONSOLE_ORIGIN).type('form').send(form({ token }));
    expect((await redeem(earlier)).status).toBe(400);
    expect((await redeem(later)).status).toBe(303);

    const admin = await signInByLink(app, tenant.userId);
    expect((await admin.post(`/console/members/${member.id}/sign-in-link`)).status).toBe(200);
    const { rows } = await sql<{ minted_by: string | null }>`SELECT minted_by FROM console_sign_in_links WHERE user_id = ${member.id} AND used_at IS NULL`.execute(app.ctx.db);
    expect(rows.map((row) => Number(row.minted_by))).toEqual([tenant.userId]);

    const otherAdmin = await addUser(app.ctx.db, tenant.workspaceId, 'admin');
    const refused = await admin.post(`/console/members/${otherAdmin.id}/sign-in-link`);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('an admin cannot mint a sign-in link for another admin');
  });

  it('let a first password be set only soon after signing in with one', async () => {
    const member = await addUser(app.ctx.db, tenant.workspaceId, 'member');
    const session = await signInByLink(app, member.id);
    await sql`UPDATE console_sessions SET created_at = now() - interval '16 minutes' WHERE user_id = ${member.id}`.execute(app.ctx.db);
    const late = await session.post('/console/password', { new_password: 'a first password' });
    expect(late.status).toBe(400);
    expect(late.text).toContain('Ask an operator for a new sign-in link');
    const fresh = await signInByLink(app, member.id);
    expect((await fresh.post('/console/password', { new_password: 'a first password' })).status).toBe(303);
  });
});

describe('secrets shown to a member', () => {
  it("show a member no secret of a failing endpoint's URL; an admin sees it masked", async () => {
    const connector = await createConnector(app.ctx.db, OPERATOR, {
      workspace_id: tenant.workspaceId,
      url: 'https://crm.example/hooks/s3cr3tpathtoken?api_key=k3yvalue0123456789',
      method: 'POST',
      format: 'json',
      auth: { type: 'none' },
      headers: [{ key: 'X-Partner', value: 'partnerheader0123456' }],
      fields: [{ key: 'crm_ref', value: 'constantfield0123456' }],
      mapping: [],
      auto_push: false,
    });
    await createWorkflow(app.ctx.db, OPERATOR, {
      workspaceId: tenant.workspaceId,
      trigger: 'lead_created',
      block: {
        endpoint: 'url',
        url: 'https://hooks.example/w/workflowpath0123',
        method: 'POST',
        format: 'json',
        headers: [],
        fields: [{ key: 'ref', value: 'blockfield0123456789' }],
      },
    });
    await sql`INSERT INTO endpoints (workspace_id, kind, endpoint_id) VALUES (${tenant.workspaceId}, 'connector', ${connector.id}) ON CONFLICT DO NOTHING`.execute(app.ctx.db);
    await sql`UPDATE endpoints SET consecutive_failures = 3, failing_since = now() WHERE kind = 'connector' AND endpoint_id = ${connector.id}`.execute(app.ctx.db);

    const member = await signInByLink(app, (await addUser(app.ctx.db, tenant.workspaceId, 'member')).id);
    const memberPage = (await member.get('/console/')).text;
    expect(memberPage).toContain(`Connector ${connector.id}`);
    expect(memberPage).toContain('https://crm.example/…');
    expect(memberPage).not.toContain('s3cr3tpathtoken');
    expect(memberPage).not.toContain('k3yvalue');

    const adminPage = (await (await signInByLink(app, tenant.userId)).get('/console/')).text;
    expect(adminPage).toContain('s3cr3tpathtoken');
    expect(adminPage).not.toContain('k3yvalue0123');

    // The Connectors and Workflows pages show a member no path, constant field, header or block field in full.
    const memberPages = [await member.get('/console/connectors'), await member.get(`/console/connectors/${connector.id}`), await member.get('/console/workflows')];
    expect(memberPages.map((answer) => answer.status)).toEqual([200, 200, 200]);
    for (const secret of ['s3cr3tpathtoken', 'k3yvalue', 'partnerheader0123', 'constantfield0123', 'workflowpath0123', 'blockfield0123']) {
      expect([secret, memberPages.some((answer) => answer.text.includes(secret))]).toEqual([secret, false]);
    }
    expect(memberPages[1]!.text).toContain('crm_ref=****3456');
  });
});

describe('forms the parser cannot read', () => {
  const post = (headers: Record<string, string>, body: string) => {
    const request = http(app).post('/console/sign-in').set('Origin', CONSOLE_ORIGIN);
    for (const [name, value] of Object.entries(headers)) request.set(name, value);
    return request.send(body);
  };

  it('answer 415, 413 or 400 pages, never 500', async () => {
    const answers = [
      await post({ 'Content-Type': 'application/x-www-form-urlencoded; charset=koi8-unknown' }, 'email=a&password=b'),
      await post({ 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'made-up' }, 'email=a&password=b'),
      await post({ 'Content-Type': 'application/x-www-form-urlencoded' }, Array.from({ length: 600 }, (_, i) => `f${i}=1`).join('&')),
      await post({ 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'gzip' }, 'not gzip at all'),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([415, 415, 413, 400]);
    for (const answer of answers) expect(answer.headers['content-type']).toMatch(/^text\/html/);
  });
});

describe('plain http', () => {
  it('is refused for the console unless PUBLIC_URL is this machine', async () => {
    const exposed = await startTestApp({ env: { PUBLIC_URL: 'http://leads.example.com' }, sameDatabaseAs: app });
    try {
      const answer = await http(exposed).get('/console/sign-in');
      expect(answer.status).toBe(403);
      expect(answer.text).toContain('The console is served over HTTPS only.');
    } finally {
      await exposed.close();
    }
    const local = await startTestApp({ env: { PUBLIC_URL: 'http://localhost:8080' }, sameDatabaseAs: app });
    try {
      expect((await http(local).get('/console/sign-in')).status).toBe(200);
    } finally {
      await local.close();
    }
  });
});
