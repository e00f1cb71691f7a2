import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { cli, drain, LOCAL_DELIVERY_ENV } from '../support/outbound.js';
import { readTestEnvironment } from '../support/env.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { postLead, uniqueEmail } from '../support/requests.js';
import { startTestApp, type TestApp } from '../support/app.js';

// On Citus every statement of the request path and of the worker names its workspace, so the
// coordinator sends it to one node: its plan has one task. This runs the API and the worker
// through what they do (intake, batches, Idempotency-Keys, reads, fan-out, deliveries), records
// every statement they send with its parameters, and EXPLAINs each on the cluster.
//
// The statements allowed to read or write every shard, and why (docs/operations.md, "Citus"):
const ALLOWED_FAN_OUT: ReadonlyArray<{ pattern: RegExp; why: string }> = [
  { pattern: /GROUP BY workspace_id\s+ORDER BY workspace_id <=/, why: 'a worker asks which workspaces have due work (reads, locks nothing), then claims per workspace' },
  { pattern: /FROM unnest\(.*\) AS t\(topic\)\s+LEFT JOIN outbox|AS s\(sender\)\s+LEFT JOIN deliveries/s, why: 'the backlog metrics count every pending event and due delivery' },
  { pattern: /^delete from "(outbox|idempotency_records|deliveries)"|DELETE FROM deliveries WHERE id IN/i, why: 'housekeeping purges old rows of every workspace' },
  { pattern: /update "outbox" set "locked_by" = \$1, "locked_until" = \$2 where "locked_by"/i, why: 'a stopping worker gives back its claims in every workspace' },
  { pattern: /INSERT INTO idempotency_records|UPDATE idempotency_records AS r/, why: 'a write group claims and settles the Idempotency-Keys of all its requests at once, which may be of several workspaces (2PC when they are)' },
];

const CITUS = readTestEnvironment().citus;
if (!CITUS) process.stderr.write('\nSKIPPED test/citus/router-queries.test.ts: DATABASE_URL is not a Citus coordinator (run the suite with DATABASE_URL=$(../shared/tools/citus/cluster.sh up)).\n');
const describeOnCitus = CITUS ? describe : describe.skip;

interface Recorded { text: string; values: unknown[] }

/** Every statement the process's pg clients send while `work` runs, with its parameters. */
async function recordStatements(work: () => Promise<void>): Promise<Recorded[]> {
  const recorded: Recorded[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const [first, second] = args as [unknown, unknown];
    if (typeof first === 'string') recorded.push({ text: first, values: Array.isArray(second) ? second : [] });
    else if (first && typeof first === 'object' && 'text' in first) {
      const config = first as { text: string; values?: unknown[] };
      recorded.push({ text: config.text, values: config.values ?? (Array.isArray(second) ? second : []) });
    }
    return (original as (...rest: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    await work();
  } finally {
    pg.Client.prototype.query = original;
  }
  return recorded;
}

const TENANT_TABLES = /\b(leads|lead_identities|lead_tags|tags|companies|company_tags|outbox|connectors|workflows|deliveries|delivery_attempts|endpoints|idempotency_records)\b/i;

/** The task counts of every distributed step of the plan (one per subplan, and the main query). */
function taskCounts(plan: unknown): number[] {
  const counts: number[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'Task Count' && typeof value === 'number') counts.push(value);
        walk(value);
      }
    }
  };
  walk(plan);
  return counts;
}

describeOnCitus('every statement on Citus', () => {
  let t: TestApp;
  let receiver: Receiver;
  let tenants: Tenant[];
  let statements: Recorded[];

  beforeAll(async () => {
    t = await startTestApp({ env: LOCAL_DELIVERY_ENV });
    tenants = [await createTenant(t.ctx.db), await createTenant(t.ctx.db)];
    receiver = await startReceiver({ databaseUrl: t.databaseUrl });
    for (const tenant of tenants) {
      await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/created`]);
      await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'tag_added', '--tag', 'VIP', '--url', `${receiver.url}/vip`]);
    }
    statements = await recordStatements(async () => {
      for (const tenant of tenants) {
        const email = uniqueEmail('router', `analytical-${tenant.workspaceId}.test`);
        const created = await postLead(t, tenant, { name: 'Ada', email, tags: ['VIP'], company: { name: 'Analytical Engines', website: `https://analytical-${tenant.workspaceId}.test` }, enrich: false });
        expect(created.status).toBe(201);
        expect((await postLead(t, tenant, { name: 'Ada L.', email, tags: ['VIP', 'New'] }, { 'Idempotency-Key': `router-${tenant.workspaceId}` })).status).toBe(200);
        expect((await postLead(t, tenant, { name: 'Ada L.', email, tags: ['VIP', 'New'] }, { 'Idempotency-Key': `router-${tenant.workspaceId}` })).status).toBe(200);
        const batch = await t.http.post('/api/v1/leads/batch').set(tenant.auth)
          .send({ leads: [{ name: 'Bob', email: uniqueEmail('bob') }, { name: 'Cy', email: uniqueEmail('cy'), tags: ['VIP'] }] });
        expect(batch.status).toBe(200);
        expect((await t.http.get(`/api/v1/leads/${created.body.data.id}`).set(tenant.auth)).status).toBe(200);
        expect((await t.http.get('/api/v1/me').set(tenant.auth)).status).toBe(200);
      }
      await drain(t);
      await drain(t);
    });
  }, 120_000);

  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('sends each statement of the request path and the worker to one node (one task), but for the listed fan-outs', async () => {
    const explainer = new pg.Client({ connectionString: t.databaseUrl });
    await explainer.connect();
    const seen = new Set<string>();
    const fanningOut: string[] = [];
    let explained = 0;
    try {
      for (const { text, values } of statements) {
        const trimmed = text.trim();
        if (!/^(WITH|SELECT|INSERT|UPDATE|DELETE)\b/i.test(trimmed) || !TENANT_TABLES.test(trimmed) || seen.has(trimmed)) continue;
        seen.add(trimmed);
        if (ALLOWED_FAN_OUT.some(({ pattern }) => pattern.test(trimmed))) continue;
        const { rows } = await explainer.query(`EXPLAIN (FORMAT JSON) ${trimmed}`, values);
        explained++;
        const counts = taskCounts(rows[0]['QUERY PLAN']);
        if (counts.some((count) => count !== 1)) {
          fanningOut.push(`${counts.join(',')} tasks: ${trimmed.replace(/\s+/g, ' ').slice(0, 300)}`);
          if (process.env.ROUTER_QUERIES_VERBOSE) process.stderr.write(`${trimmed}\n${JSON.stringify(rows[0]['QUERY PLAN'], null, 1)}\n`);
        }
      }
    } finally {
      await explainer.end();
    }
    expect(fanningOut).toEqual([]);
    expect(explained).toBeGreaterThan(15);
  }, 120_000);
});
