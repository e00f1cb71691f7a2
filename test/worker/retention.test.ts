import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql, type RawBuilder } from 'kysely';
import { sessionLimitsOf } from '../../src/console-auth/service.js';
import { housekeeping } from '../../src/worker/housekeeping.js';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';

// Every table that holds personal data or credentials past its use has a lifetime, enforced by
// the worker's housekeeping (docs/operations.md, "Retention"): one row just past it and one just
// inside it are seeded with SQL, one housekeeping run deletes the first and keeps the second.
// (Leads, companies and their keys live until erased; users, keys, connectors and workflows
// until removed or deleted.)

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

interface Lifetime {
  table: string;
  /** Inserts a row aged `past ? just past : just inside` its lifetime, marked with `mark`. */
  seed: (mark: string, past: boolean) => RawBuilder<unknown>;
  /** Counts the rows marked `mark` that are left. */
  left: (mark: string) => RawBuilder<{ n: number }>;
}

const DELIVERY_DAYS = 30;
const AUDIT_DAYS = 365;
const age = (past: boolean, lifetime: string, margin = '1 minute') => sql.raw(`now() - interval '${lifetime}' ${past ? '-' : '+'} interval '${margin}'`);
const count = (table: string, where: RawBuilder<unknown>) => sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE ${where}`;
const token = (mark: string) => sql`sha256(convert_to(${mark}, 'UTF8'))`;

const LIFETIMES: Lifetime[] = [
  {
    table: 'idempotency_records (stored answers: 24 hours)',
    seed: (mark, past) =>
      sql`INSERT INTO idempotency_records (api_key_id, workspace_id, key, fingerprint, status_code, response_body, created_at)
          VALUES (${tenant.keyId}, ${tenant.workspaceId}, ${mark}, 'f', 201, '{}', ${age(past, '24 hours')})`,
    left: (mark) => count('idempotency_records', sql`key = ${mark}`),
  },
  {
    table: `deliveries (request bodies and replies: DELIVERY_RETENTION_DAYS after they finished)`,
    seed: (mark, past) =>
      sql`INSERT INTO deliveries (workspace_id, event, sender, trigger, message_id, url, method, max_attempts, branch, attempts, body, created_at)
          VALUES (${tenant.workspaceId}, 'lead', 'connector_push', 'push', ${mark}, 'https://crm.example', 'POST', 3, 'Delivered', 1, '{}', ${age(past, `${DELIVERY_DAYS} days`, '1 hour')})`,
    left: (mark) => count('deliveries', sql`message_id = ${mark}`),
  },
  {
    table: 'outbox (events: 7 days after they were processed)',
    seed: (mark, past) =>
      sql`INSERT INTO outbox (workspace_id, topic, payload, created_at, processed_at)
          VALUES (${tenant.workspaceId}, 'lead.created', ${JSON.stringify({ mark })}, now() - interval '30 days', ${age(past, '7 days')})`,
    left: (mark) => count('outbox', sql`payload->>'mark' = ${mark}`),
  },
  {
    table: 'console_sign_in_links (when they expire)',
    seed: (mark, past) =>
      sql`INSERT INTO console_sign_in_links (token_hash, workspace_id, user_id, expires_at) VALUES (${token(mark)}, ${tenant.workspaceId}, ${tenant.userId}, ${age(past, '0 minutes')})`,
    left: (mark) => count('console_sign_in_links', sql`token_hash = ${token(mark)}`),
  },
  {
    table: 'console_sessions (when they expire)',
    seed: (mark, past) =>
      sql`INSERT INTO console_sessions (token_hash, workspace_id, user_id, expires_at) VALUES (${token(mark)}, ${tenant.workspaceId}, ${tenant.userId}, ${age(past, '0 minutes')})`,
    left: (mark) => count('console_sessions', sql`token_hash = ${token(mark)}`),
  },
  {
    table: "console_sign_in_failures (past the throttle's 15-minute window)",
    seed: (mark, past) => sql`INSERT INTO console_sign_in_failures (subject, created_at) VALUES (${mark}, ${age(past, '15 minutes')})`,
    left: (mark) => count('console_sign_in_failures', sql`subject = ${mark}`),
  },
  {
    table: 'audit_log (AUDIT_RETENTION_DAYS)',
    seed: (mark, past) =>
      sql`INSERT INTO audit_log (workspace_id, at, actor_kind, action, target_type, details)
          VALUES (${tenant.workspaceId}, ${age(past, `${AUDIT_DAYS} days`, '1 hour')}, 'operator', 'key.created', 'api_key', ${JSON.stringify({ mark })})`,
    left: (mark) => count('audit_log', sql`details->>'mark' = ${mark}`),
  },
];

describe('retention', () => {
  it.each(LIFETIMES.map((lifetime) => [lifetime.table, lifetime] as const))('of %s: housekeeping deletes an older row and keeps a younger one', async (table, lifetime) => {
    const [old, young] = [`old-${table.split(' ')[0]}`, `young-${table.split(' ')[0]}`];
    await lifetime.seed(old, true).execute(t.ctx.db);
    await lifetime.seed(young, false).execute(t.ctx.db);
    await housekeeping(t.ctx.db, DELIVERY_DAYS, sessionLimitsOf(t.ctx.config), AUDIT_DAYS);
    const left = async (mark: string) => (await lifetime.left(mark).execute(t.ctx.db)).rows[0]!.n;
    expect({ old: await left(old), young: await left(young) }).toEqual({ old: 0, young: 1 });
  });
});
