import { sql } from 'kysely';
import type { Response, Test } from 'supertest';
import type { Db } from '../../src/db/connect.js';
import type { TestApp } from './app.js';
import type { Tenant } from './fixtures.js';

// The requests and reads most tests make, in one place: the two write routes as a tenant,
// values no other request of the file uses, and row counts.

/**
 * The request on the wire at once, as a promise of its answer: supertest sends a request only
 * when it is awaited (or its `then` is called), and a test that lines requests up, or holds one
 * while it checks something, needs it sent now.
 */
export const sentNow = (request: Test): Promise<Response> => request.then((response) => response);

/** POST /leads as the tenant; `headers` adds e.g. an Idempotency-Key. */
export const postLead = (t: TestApp, tenant: Tenant, body: object, headers: Record<string, string> = {}) => t.http.post('/api/v1/leads').set(tenant.auth).set(headers).send(body);

/** POST /leads/batch as the tenant; `headers` adds e.g. an Idempotency-Key. */
export const postBatch = (t: TestApp, tenant: Tenant, body: object, headers: Record<string, string> = {}) =>
  t.http.post('/api/v1/leads/batch').set(tenant.auth).set(headers).send(body);

let sequence = 0;
/** `prefix` and a number no other call of this test file gets. */
export const uniqueName = (prefix = 'person') => `${prefix}${++sequence}`;

/** An address no other call of this test file gets; on a free-mail domain (no company is built from it) unless told otherwise. */
export const uniqueEmail = (prefix = 'person', domain = 'gmail.com') => `${uniqueName(prefix)}@${domain}`;

type WorkspaceTable = 'leads' | 'companies' | 'tags' | 'outbox';
type CountedTable = WorkspaceTable | 'lead_identities' | 'lead_tags' | 'idempotency_records';

/** The rows of `table`: all of them, or one workspace's. */
export async function rowCount(db: Db, table: CountedTable): Promise<number>;
export async function rowCount(db: Db, table: WorkspaceTable, workspaceId: number): Promise<number>;
export async function rowCount(db: Db, table: CountedTable, workspaceId?: number): Promise<number> {
  const where = workspaceId === undefined ? sql`` : sql`WHERE workspace_id = ${workspaceId}`;
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} ${where}`.execute(db);
  return rows[0]!.n;
}

/** The newest outbox event's id (0 when there is none): read it before a request, then ask outboxSince what the request queued. */
export async function lastOutboxId(db: Db): Promise<number> {
  const { rows } = await sql<{ id: number | null }>`SELECT max(id)::int AS id FROM outbox`.execute(db);
  return rows[0]!.id ?? 0;
}

/** The workspace's outbox events after `sinceId`, oldest first. */
export const outboxSince = (db: Db, workspaceId: number, sinceId: number) =>
  db.selectFrom('outbox').where('id', '>', sinceId).where('workspace_id', '=', workspaceId).select(['topic', 'payload']).orderBy('id').execute();
