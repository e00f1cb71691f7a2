import { sql } from 'kysely';
import supertest from 'supertest';
import { mintSignInLink, setUserPassword } from '../../src/console-auth/service.js';
import type { Db } from '../../src/db/connect.js';
import { insertUser, type Role } from '../../src/users/repository.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { OPERATOR } from '../../src/audit/service.js';

// Signing in to the console over HTTP as a browser would: Origin on every POST, the session
// cookie sent back, the CSRF token read from the page.

/** The origin the console trusts in tests: PUBLIC_URL's (the tests' config derives it from HOST and PORT). */
export const CONSOLE_ORIGIN = 'http://127.0.0.1:3000';

export interface ConsoleSession {
  cookie: string;
  csrf: string;
  get(path: string): supertest.Test;
  /** A form POST from a console page (Origin set, CSRF token added unless given). */
  post(path: string, form?: Record<string, string | string[]>): supertest.Test;
}

export const http = (app: TestApp) => supertest(app.app);

/** The session cookie (name=value) a sign-in answer set. */
export function sessionCookie(response: supertest.Response): string {
  const cookies = ([] as string[]).concat(response.headers['set-cookie'] ?? []);
  const cookie = cookies.find((line) => /^console_session=[^;]+/.test(line));
  if (!cookie) throw new Error(`no session cookie in ${response.status} ${JSON.stringify(response.headers)}`);
  return cookie.split(';')[0]!;
}

export const csrfOf = (html: string): string => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

export function form(values: Record<string, string | string[]>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) for (const item of ([] as string[]).concat(value)) params.append(key, item);
  return params.toString();
}

export async function sessionFromCookie(app: TestApp, cookie: string): Promise<ConsoleSession> {
  const page = await http(app).get('/console/').set('Cookie', cookie);
  const csrf = csrfOf(page.text);
  return {
    cookie,
    csrf,
    get: (path) => http(app).get(path).set('Cookie', cookie),
    post: (path, values = {}) =>
      http(app)
        .post(path)
        .set('Cookie', cookie)
        .set('Origin', CONSOLE_ORIGIN)
        .type('form')
        .send(form({ _csrf: csrf, ...values })),
  };
}

export async function linkToken(db: Db, userId: number): Promise<string> {
  const { url } = await mintSignInLink(db, OPERATOR, CONSOLE_ORIGIN, userId);
  return new URL(url).hash.slice(1);
}

/** Signs the user in with a fresh sign-in link. */
export async function signInByLink(app: TestApp, userId: number): Promise<ConsoleSession> {
  const answer = await http(app)
    .post('/console/sign-in/link')
    .set('Origin', CONSOLE_ORIGIN)
    .type('form')
    .send(form({ token: await linkToken(app.ctx.db, userId) }));
  if (answer.status !== 303) throw new Error(`sign-in by link answered ${answer.status}`);
  return sessionFromCookie(app, sessionCookie(answer));
}

export async function addUser(db: Db, workspaceId: number, role: Role, password?: string) {
  const user = await insertUser(db, { workspace_id: workspaceId, email: `${role}-${Math.random().toString(36).slice(2)}@acme.test`, role });
  if (password) await setUserPassword(db, OPERATOR, user.id, password);
  return user;
}

export const passwordSignIn = (app: TestApp, email: string, password: string) =>
  http(app).post('/console/sign-in').set('Origin', CONSOLE_ORIGIN).type('form').send(form({ email, password }));

export const countRows = async (db: Db, table: 'tags' | 'console_sessions' | 'users', workspaceId?: number) => {
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM ${sql.table(table)} ${workspaceId === undefined ? sql`` : sql`WHERE workspace_id = ${workspaceId}`}`.execute(db);
  return rows[0]!.n;
};

/** A running app with two workspaces and the first one's admin signed in to the console. */
export interface ConsoleBed {
  app: TestApp;
  tenant: Tenant;
  other: Tenant;
  admin: ConsoleSession;
}

export async function startConsoleBed(): Promise<ConsoleBed> {
  const app = await startTestApp();
  const tenant = await createTenant(app.ctx.db);
  const other = await createTenant(app.ctx.db, { name: 'Other workspace' });
  return { app, tenant, other, admin: await signInByLink(app, tenant.userId) };
}
