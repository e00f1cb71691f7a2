import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { sessionLimitsOf } from '../../src/console-auth/service.js';
import { SIGN_IN_REFUSED, SIGN_IN_THROTTLED, THROTTLE } from '../../src/console-auth/throttle.js';
import { housekeeping } from '../../src/worker/housekeeping.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { cliJson, runCli } from '../support/cli.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { addUser, CONSOLE_ORIGIN, form, http, linkToken, passwordSignIn, sessionCookie, signInByLink } from './support.js';

// Signing in and out of the console: single-use links, passwords, the throttle, sessions that end.

const bed = testBed();
let app: TestApp;
let tenant: Tenant;

beforeAll(() => {
  ({
    t: app,
    tenants: [tenant],
  } = bed);
});

const redeem = (token: string) => http(app).post('/console/sign-in/link').set('Origin', CONSOLE_ORIGIN).type('form').send(form({ token }));

describe('sign-in links', () => {
  it('sign in once: the same link a second time, an expired one and a made-up one are refused', async () => {
    const token = await linkToken(app.ctx.db, tenant.userId);
    const first = await redeem(token);
    expect(first.status).toBe(303);
    const cookie = first.headers['set-cookie']![0]!;
    expect(cookie).toMatch(/^console_session=[A-Za-z0-9_-]{43}; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    expect((await redeem(token)).status).toBe(400);

    const expired = await linkToken(app.ctx.db, tenant.userId);
    await sql`UPDATE console_sign_in_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`.execute(app.ctx.db);
    expect((await redeem(expired)).status).toBe(400);
    expect((await redeem('A'.repeat(43))).status).toBe(400);
  });

  it('are minted by the CLI for 15 minutes, the token only in the fragment', async () => {
    const minted = await cliJson<{ url: string; expires_at: string }>(app.databaseUrl, ['console', 'link', '--user', String(tenant.userId)], {
      PUBLIC_URL: 'https://leads.example.com',
    });
    const url = new URL(minted.url);
    expect(`${url.origin}${url.pathname}${url.search}`).toBe('https://leads.example.com/console/sign-in/link');
    expect(url.hash).toMatch(/^#[A-Za-z0-9_-]{43}$/);
    const minutes = (Date.parse(minted.expires_at) - Date.now()) / 60_000;
    expect(minutes).toBeGreaterThan(14);
    expect(minutes).toBeLessThanOrEqual(15);
    expect((await redeem(url.hash.slice(1))).status).toBe(303);
  });
});

/** `user set-password --id U` with the password on standard input. */
const setPassword = (userId: number, password: string) =>
  runCli(['user', 'set-password', '--id', String(userId)], { DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'warn' }, `${password}\n`);

describe('passwords', () => {
  it('are set from standard input and sign in; a wrong one and an unknown email get the same answer', async () => {
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'admin');
    const set = await setPassword(user.id, 'a long enough password');
    expect(JSON.parse(set.stdout)).toEqual({ id: user.id, password_set: true });
    expect((await setPassword(user.id, 'short')).stderr).toContain('The password must be 10 to 1024 characters long.');

    const signedIn = await passwordSignIn(app, user.email.toUpperCase(), 'a long enough password');
    expect(signedIn.status).toBe(303);
    expect((await http(app).get('/console/leads').set('Cookie', sessionCookie(signedIn))).status).toBe(200);
    const wrong = await passwordSignIn(app, user.email, 'not the password');
    const unknown = await passwordSignIn(app, 'nobody@acme.test', 'not the password');
    expect([wrong.status, unknown.status]).toEqual([401, 401]);
    expect(wrong.text).toContain(SIGN_IN_REFUSED);
    expect(unknown.text.replace('nobody@acme.test', user.email)).toBe(wrong.text);
  });

  it('are slowed and then refused for an email after repeated failures, known or not, even when right', async () => {
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'admin', 'the right password');
    for (const email of [user.email, 'ghost@acme.test']) {
      const answers: number[] = [];
      for (let attempt = 0; attempt < THROTTLE.email.refuseAfter; attempt += 1) answers.push((await passwordSignIn(app, email, 'wrong password')).status);
      expect(answers.every((status) => status === 401)).toBe(true);
      const started = Date.now();
      const refused = await passwordSignIn(app, email, 'the right password');
      expect(refused.status).toBe(429);
      expect(refused.text).toContain(SIGN_IN_THROTTLED);
      expect(Date.now() - started).toBeLessThan(THROTTLE.delayMs);
    }
    // Slowed before refused: the attempts past slowAfter each waited.
    await sql`DELETE FROM console_sign_in_failures`.execute(app.ctx.db);
    for (let attempt = 0; attempt < THROTTLE.email.slowAfter; attempt += 1) await passwordSignIn(app, user.email, 'wrong password');
    const started = Date.now();
    expect((await passwordSignIn(app, user.email, 'the right password')).status).toBe(303);
    expect(Date.now() - started).toBeGreaterThanOrEqual(THROTTLE.delayMs);
  }, 60_000);

  it('are refused per address after many failures across emails', async () => {
    await sql`DELETE FROM console_sign_in_failures`.execute(app.ctx.db);
    // One failure through HTTP shows how this client's address is recorded; the rest are written as many.
    await passwordSignIn(app, 'someone@acme.test', 'wrong password');
    await sql`INSERT INTO console_sign_in_failures (subject) SELECT subject FROM console_sign_in_failures, generate_series(2, ${THROTTLE.address.refuseAfter})
      WHERE subject LIKE 'address:%'`.execute(app.ctx.db);
    const user = await addUser(app.ctx.db, tenant.workspaceId, 'admin', 'the right password');
    expect((await passwordSignIn(app, user.email, 'the right password')).status).toBe(429);
    await sql`DELETE FROM console_sign_in_failures`.execute(app.ctx.db);
  });
});

describe('sessions', () => {
  it('end after 30 minutes idle or 12 hours in all by default, and when signing out (the row is deleted)', async () => {
    const idle = await signInByLink(app, tenant.userId);
    expect((await idle.get('/console/leads')).status).toBe(200);
    await sql`UPDATE console_sessions SET last_seen_at = now() - interval '29 minutes'`.execute(app.ctx.db);
    expect((await idle.get('/console/leads')).status).toBe(200);
    await sql`UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes'`.execute(app.ctx.db);
    const ended = await idle.get('/console/leads');
    expect([ended.status, ended.headers.location]).toEqual([303, '/console/sign-in']);

    const old = await signInByLink(app, tenant.userId);
    await sql`UPDATE console_sessions SET expires_at = now() - interval '1 second'`.execute(app.ctx.db);
    expect((await old.get('/console/leads')).status).toBe(303);
    expect((await old.post('/console/tags', { name: 'after the end' })).status).toBe(401);

    const current = await signInByLink(app, tenant.userId);
    const {
      rows: [before],
    } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM console_sessions WHERE expires_at > now()`.execute(app.ctx.db);
    expect((await current.post('/console/sign-out')).status).toBe(303);
    const {
      rows: [after],
    } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM console_sessions WHERE expires_at > now()`.execute(app.ctx.db);
    expect(after!.n).toBe(before!.n - 1);
    expect((await current.get('/console/leads')).status).toBe(303);
  });

  it("that ended, with used links and old failures, are deleted by the worker's housekeeping; live ones stay", async () => {
    const live = await signInByLink(app, tenant.userId);
    const ended = await signInByLink(app, tenant.userId);
    await sql`UPDATE console_sessions SET last_seen_at = now() - interval '13 hours' WHERE token_hash = sha256(${ended.cookie.split('=')[1]!}::bytea)`.execute(app.ctx.db);
    await linkToken(app.ctx.db, tenant.userId);
    await sql`INSERT INTO console_sign_in_failures (subject, created_at) VALUES ('email:old@acme.test', now() - interval '16 minutes'), ('email:new@acme.test', now())`.execute(
      app.ctx.db,
    );
    await housekeeping(app.ctx.db, 30, sessionLimitsOf(app.ctx.config), 365);
    expect((await live.get('/console/leads')).status).toBe(200);
    const {
      rows: [left],
    } = await sql<{ ended: number; used: number; unused: number; failures: string[] }>`SELECT
      (SELECT count(*)::int FROM console_sessions WHERE last_seen_at < now() - interval '12 hours') AS ended,
      (SELECT count(*)::int FROM console_sign_in_links WHERE used_at IS NOT NULL) AS used,
      (SELECT count(*)::int FROM console_sign_in_links WHERE used_at IS NULL) AS unused,
      (SELECT array_agg(subject) FROM console_sign_in_failures) AS failures`.execute(app.ctx.db);
    expect(left).toEqual({ ended: 0, used: 0, unused: 1, failures: ['email:new@acme.test'] });
  });

  it('use a __Host- cookie with Secure when PUBLIC_URL is https', async () => {
    const secure = await startTestApp({ env: { PUBLIC_URL: 'https://leads.example.com' }, sameDatabaseAs: app });
    try {
      const answer = await supertestOf(secure)
        .post('/console/sign-in/link')
        .set('Origin', 'https://leads.example.com')
        .type('form')
        .send(form({ token: await linkToken(app.ctx.db, tenant.userId) }));
      expect(answer.headers['set-cookie']![0]).toMatch(/^__Host-console_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure$/);
    } finally {
      await secure.close();
    }
  });
});

const supertestOf = (testApp: TestApp) => http(testApp);
