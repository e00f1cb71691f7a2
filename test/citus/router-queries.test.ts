import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { cli, drain, LOCAL_DELIVERY_ENV } from '../support/outbound.js';
import { readTestEnvironment } from '../support/env.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { postLead, uniqueEmail } from '../support/requests.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { signInByLink } from '../console/support.js';
import { createImport, DEFAULT_SWITCHES, startImport } from '../../src/lead-imports/service.js';

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
  { pattern: /^UPDATE lead_imports SET locked_by = NULL, locked_until = NULL WHERE locked_by = \$1$/, why: 'a stopping worker gives back its CSV import in any workspace' },
  {
    pattern:
      /^(update "(connectors|workflows|tags)" set .* where "id" = \$\d+( and "active" = \$\d+)?( and "deleted_at" is null)? returning|select \* from "(connectors|workflows)" where "id" in \(\$1\)$|insert into "endpoints" .* from "(connectors|workflows)" where "id" = \$\d+|select "(workspace_id|endpoint_id", "max_per_second.*)" from "endpoints" where "kind" = \$1 and "endpoint_id" (=|in) \(?\$2\)?$|UPDATE deliveries SET branch = 'Failed', error = \$1)/s,
    why: 'a configuration change by id (edit, enable, rotate, cap, activate, delete a connector, workflow or tag), from the CLI or the console after its routed ownership check: rare, one row locked, every shard asked',
  },
  {
    pattern: /INSERT INTO idempotency_records|UPDATE idempotency_records AS r/,
    why: 'a write group claims and settles the Idempotency-Keys of all its requests at once, which may be of several workspaces (2PC when they are)',
  },
];

const CITUS = readTestEnvironment().citus;
if (!CITUS)
  process.stderr.write(
    '\nSKIPPED test/citus/router-queries.test.ts: DATABASE_URL is not a Citus coordinator (run the suite with DATABASE_URL=$(../shared/tools/citus/cluster.sh up)).\n',
  );
const describeOnCitus = CITUS ? describe : describe.skip;

interface Recorded {
  text: string;
  values: unknown[];
}

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

// A delegated function (src/db/delegated.ts) is called by name: its call is explained as well.
const TENANT_TABLES =
  /\b(delegated_\w+|leads|lead_identities|lead_tags|tags|companies|company_tags|outbox|connectors|workflows|deliveries|delivery_attempts|endpoints|idempotency_records|suppressed_contacts|lead_imports|lead_import_rows|audit_log)\b/i;

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

/** Every page of the console and its actions, as an admin of the tenant's workspace. */
async function browseConsole(t: TestApp, tenant: Tenant, receiverUrl: string): Promise<void> {
  const admin = await signInByLink(t, tenant.userId);
  const ok = async (answer: Promise<{ status: number; text: string }> | { status: number; text: string }, path: string) => {
    const { status, text } = await answer;
    if (status >= 400) throw new Error(`console ${path} answered ${status}: ${/<p role="alert">([^<]*)/.exec(text)?.[1] ?? ''}`);
  };
  const connector = await cli<{ id: number }>(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiverUrl}/crm`]);
  const firstId = async (table: 'leads' | 'tags' | 'deliveries') =>
    (await t.ctx.db.selectFrom(table).where('workspace_id', '=', tenant.workspaceId).select('id').orderBy('id').limit(1).executeTakeFirstOrThrow()).id;
  const [leadId, tagId] = [await firstId('leads'), await firstId('tags')];
  await ok(admin.post(`/console/leads/${leadId}/push`, { connector: String(connector.id) }), 'push');
  await ok(admin.post(`/console/connectors/${connector.id}/test`), 'send test');
  const deliveryId = await firstId('deliveries');
  for (const path of [
    '/console/',
    '/console/leads',
    '/console/leads?search=ada',
    `/console/leads?tag=${tagId}`,
    `/console/leads/export.csv?tag=${tagId}`,
    `/console/leads/${leadId}`,
    '/console/connectors',
    `/console/connectors/${connector.id}`,
    '/console/workflows',
    '/console/deliveries',
    `/console/deliveries?connector=${connector.id}`,
    `/console/deliveries/${deliveryId}`,
    '/console/api-keys',
    '/console/tags',
    '/console/companies',
    '/console/members',
    '/console/password',
    '/console/audit-log',
  ]) {
    await ok(admin.get(path), path);
  }
  await ok(admin.post(`/console/deliveries/${deliveryId}/replay`), 'replay');
  await ok(admin.post('/console/deliveries/recover', { connector: String(connector.id), since: '2020-01-01T00:00:00Z' }), 'recover');
  await ok(admin.post('/console/api-keys', { name: 'router', scopes: 'leads:read' }), 'create key');
  await ok(admin.post('/console/tags', { name: 'Router tag' }), 'create tag');
  await ok(admin.post('/console/companies', { name: 'Router company' }), 'create company');
  // The configuration changes: each by an id the session's workspace owns.
  const routerTag = await t.ctx.db.selectFrom('tags').where('workspace_id', '=', tenant.workspaceId).where('name', '=', 'Router tag').select('id').executeTakeFirstOrThrow();
  const workflow = await t.ctx.db.selectFrom('workflows').where('workspace_id', '=', tenant.workspaceId).select('id').orderBy('id').executeTakeFirstOrThrow();
  await ok(admin.post(`/console/connectors/${connector.id}/update`, { max_per_second: '5' }), 'connector update');
  await ok(admin.post(`/console/connectors/${connector.id}/enable`), 'connector enable');
  await ok(admin.post(`/console/connectors/${connector.id}/reveal-secret`), 'reveal secret');
  await ok(admin.post(`/console/connectors/${connector.id}/rotate-secret`, { overlap_hours: '1' }), 'rotate secret');
  await ok(admin.post(`/console/workflows/${workflow.id}/deactivate`), 'deactivate');
  await ok(admin.post(`/console/workflows/${workflow.id}/activate`), 'activate');
  await ok(admin.post(`/console/workflows/${workflow.id}/cap`, { max_per_second: '3' }), 'workflow cap');
  await ok(admin.post(`/console/tags/${routerTag.id}`, { action: 'save', name: 'Router tag renamed', color: '#f00' }), 'tag update');
  // A person's data: their export, then their erasure with suppression (its lead_erased notices go out in the next drain).
  await ok(admin.get(`/console/leads/${leadId}/export`), 'export');
  await ok(admin.post(`/console/leads/${leadId}/erase`, { suppress: 'on' }), 'erase');
  await ok(admin.post(`/console/api-keys/${tenant.keyId}/revoke`), 'revoke key');
  await ok(admin.post(`/console/connectors/${connector.id}/delete`), 'connector delete');
  // The audit entries those changes wrote, a page and the one before it.
  await ok(admin.get('/console/audit-log'), 'audit log');
  await ok(admin.get('/console/audit-log?before=3'), 'audit log, older');
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
        const created = await postLead(t, tenant, {
          name: 'Ada',
          email,
          tags: ['VIP'],
          company: { name: 'Analytical Engines', website: `https://analytical-${tenant.workspaceId}.test` },
          enrich: false,
        });
        expect(created.status).toBe(201);
        expect((await postLead(t, tenant, { name: 'Ada L.', email, tags: ['VIP', 'New'] }, { 'Idempotency-Key': `router-${tenant.workspaceId}` })).status).toBe(200);
        expect((await postLead(t, tenant, { name: 'Ada L.', email, tags: ['VIP', 'New'] }, { 'Idempotency-Key': `router-${tenant.workspaceId}` })).status).toBe(200);
        const batch = await t.http
          .post('/api/v1/leads/batch')
          .set(tenant.auth)
          .send({
            leads: [
              { name: 'Bob', email: uniqueEmail('bob') },
              { name: 'Cy', email: uniqueEmail('cy'), tags: ['VIP'] },
            ],
          });
        expect(batch.status).toBe(200);
        expect((await t.http.get(`/api/v1/leads/${created.body.data.id}`).set(tenant.auth)).status).toBe(200);
        expect((await t.http.get('/api/v1/me').set(tenant.auth)).status).toBe(200);
      }
      await drain(t);
      await drain(t);
      await browseConsole(t, tenants[0]!, receiver.url);
      // A CSV import, run by the worker, with its pages and results.
      // Eve's company exists (Ada's): her row fills it in through the set statements.
      const website = `https://analytical-${tenants[0]!.workspaceId}.test`;
      const file = `Name,Email,Company,Website,Industry\nEve,eve@router-import.test,Analytical Engines,${website},Computing\nNo contact,,,,\n`;
      const job = await createImport(t.ctx.db, tenants[0]!.workspaceId, null, 'router.csv', Buffer.from(file));
      await startImport(t.ctx.db, job, ['name', 'email', 'company.name', 'company.website', 'company.industry'], DEFAULT_SWITCHES);
      await drain(t);
      const admin = await signInByLink(t, tenants[0]!.userId);
      for (const path of [`/console/leads/import/${job.id}`, `/console/leads/import/${job.id}/results.csv`, '/console/leads/export.csv?search=eve'])
        expect([path, (await admin.get(path)).status]).toEqual([path, 200]);
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
        // Delegated, its call is one task on the workspace's node; run on the coordinator, it has none.
        const notDelegated = /\bdelegated_\w+\(/.test(trimmed) && counts.length !== 1;
        if (notDelegated || counts.some((count) => count !== 1)) {
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
