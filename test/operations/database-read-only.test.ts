import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { pino } from 'pino';
import { createDb, createPool } from '../../src/db/connect.js';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { serveApp, type ServedApp } from '../support/served-app.js';

// A failover leaves connections open to a node that is now a replica (or a provider makes a
// server read-only): they stay up and answer every write with SQLSTATE 25006. Such a
// connection is an outage like a refused one: 503 with Retry-After, and the pool drops it
// and every other connection it had opened by then, so the next request opens a new
// connection, which the endpoint sends to the new primary.
//
// No server can change another session's settings, so the test turns the pool's own
// sessions read-only (SET SESSION CHARACTERISTICS on each of them), as a demoted node's
// sessions are, while new sessions of the same database stay writable: the endpoint's new
// primary. A per-database default_transaction_read_only (new sessions only) stands for the
// old node as the admin CLI reaches it.

const POOL_SIZE = 3;
const lead = (n: number) => ({ name: `Read Only ${n}`, email: `read-only-${n}@acme-robotics.com` });

let database: TestDatabase | undefined;
let app: ServedApp | undefined;
let observer: pg.Client | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});
afterAll(async () => {
  await observer?.end();
  await database?.drop();
});

async function tenantOn(url: string): Promise<Tenant> {
  const setup = createDb(createPool(url, 1, { logger: pino({ level: 'silent' }), name: 'setup', connectTimeoutMs: 30_000 }));
  return createTenant(setup).finally(() => setup.destroy());
}

async function postLead(tenant: Tenant, n: number) {
  const response = await fetch(`${app!.url}/api/v1/leads`, {
    method: 'POST',
    headers: { ...tenant.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify(lead(n)),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), error: ((await response.json()) as { error?: string }).error };
}

async function readiness() {
  const response = await fetch(`${app!.url}/readyz`);
  return { status: response.status, database: ((await response.json()) as { database?: string }).database };
}

/** Checks out every connection of the pool at once (opening them), makes each session read-only, and returns their backend pids. */
async function makePooledSessionsReadOnly(pool: pg.Pool): Promise<number[]> {
  const clients = await Promise.all(Array.from({ length: POOL_SIZE }, () => pool.connect()));
  try {
    const pids: number[] = [];
    for (const client of clients) {
      await client.query('SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY');
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      pids.push(rows[0]!.pid);
    }
    return pids;
  } finally {
    for (const client of clients) client.release();
  }
}

describe('a pooled connection whose server turned read-only (25006)', () => {
  it('answers 503 with Retry-After, drops every connection of that server, the next request reaches the new primary, and /readyz tells it', async () => {
    database = await createTestDatabase();
    observer = new pg.Client({ connectionString: database.url });
    await observer.connect();
    const tenant = await tenantOn(database.url);
    app = await serveApp({ databaseUrl: database.url, env: { DATABASE_POOL_SIZE: String(POOL_SIZE) } });
    expect((await postLead(tenant, 1)).status).toBe(201);

    const stale = await makePooledSessionsReadOnly(app.ctx.pool);
    expect(await postLead(tenant, 2)).toEqual({ status: 503, retryAfter: '5', error: 'service_unavailable' });
    // Not kept for later requests: the idle ones closed too, not only the one that answered 25006.
    await eventually(async () => {
      const { rows } = await observer!.query<{ open: number }>('SELECT count(*)::int AS open FROM pg_stat_activity WHERE pid = ANY($1)', [stale]);
      return rows[0]!.open === 0;
    }, 5000);
    expect(await postLead(tenant, 2)).toEqual({ status: 201, retryAfter: null, error: undefined });
    expect((await postLead(tenant, 3)).status).toBe(201);
    // Readiness, which only reads, tells a read-only session too, and retires the pool's connections as a write would.
    const readOnlyAgain = await makePooledSessionsReadOnly(app.ctx.pool);
    expect(await readiness()).toEqual({ status: 503, database: 'read_only' });
    await eventually(async () => {
      const { rows } = await observer!.query<{ open: number }>('SELECT count(*)::int AS open FROM pg_stat_activity WHERE pid = ANY($1)', [readOnlyAgain]);
      return rows[0]!.open === 0;
    }, 5000);
    expect(await readiness()).toEqual({ status: 200, database: 'ok' });
    const { rows } = await observer.query<{ email: string }>("SELECT emails[1] AS email FROM leads WHERE emails[1] LIKE 'read-only-%' ORDER BY id");
    expect(rows.map((row) => row.email)).toEqual([1, 2, 3].map((n) => lead(n).email));
  }, 60_000);

  it('is reported by the admin CLI as database_unavailable', async () => {
    database ??= await createTestDatabase();
    const name = new URL(database.url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE "${name}" SET default_transaction_read_only = on`);
      const result = await runCli(['workspace', 'create', '--name', 'Read only'], { DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
      expect({ code: result.code, error: result.error?.error }).toEqual({ code: 1, error: 'database_unavailable' });
      expect(result.error?.message).toMatch(/read-only/);
    } finally {
      await admin.query(`ALTER DATABASE "${name}" RESET default_transaction_read_only`);
      await admin.end();
    }
  }, 60_000);
});
