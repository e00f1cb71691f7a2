import { beforeAll, describe, expect, it } from '@jest/globals';
import type { LeadRow } from '../../src/client/index.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { clientFor, recordingFetch } from '../support/client.js';
import { createTenant, type Tenant } from '../support/fixtures.js';

const bed = testBed({ tenants: [] });
let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  ({ t } = bed);
  baseUrl = await t.listen();
});

const leadIdsByEmail = async (tenant: Tenant) => {
  const leads = await t.ctx.db.selectFrom('leads').select(['id', 'emails']).where('workspace_id', '=', tenant.workspaceId).execute();
  return new Map(leads.flatMap((lead) => lead.emails.map((address) => [address, lead.id] as const)));
};
const batchSizes = (sent: ReturnType<typeof recordingFetch>['sent']) => sent.map((request) => (request.body as { leads: unknown[] }).leads.length);

describe('createLeads', () => {
  it('imports 250 rows as 3 batches and returns 250 results in the caller order', async () => {
    const tenant = await createTenant(t.ctx.db);
    const { sent, fetch } = recordingFetch();
    const address = (n: number) => `import${n}@acme-robotics.test`;
    // Rows 10 and 249 repeat a person of their own batch, row 105 one of an earlier batch;
    // rows 42, 142 and 242 name a tag id that does not exist.
    const sameAs: Record<number, number> = { 10: 3, 105: 5, 249: 200 };
    const failing = new Set([42, 142, 242]);
    const rows: LeadRow[] = Array.from({ length: 250 }, (_, n) => ({
      name: `Row ${n}`,
      email: address(sameAs[n] ?? n),
      ...(failing.has(n) ? { tag_ids: [999_999_999] } : {}),
    }));

    const result = await clientFor(baseUrl, tenant, { fetch }).createLeads(rows, { enrich: false });

    expect(batchSizes(sent)).toEqual([100, 100, 50]);
    expect(new Set(sent.map((request) => request.idempotencyKey)).size).toBe(3);
    expect(sent.every((request) => (request.body as { enrich: boolean }).enrich === false)).toBe(true);
    expect(result.rows).toHaveLength(250);
    expect(result.rows.map((row) => row.index)).toEqual(rows.map((_, n) => n));
    const expected = rows.map((_, n) => (failing.has(n) ? 'failed' : n in sameAs ? 'updated' : 'created'));
    expect(result.rows.map((row) => row.status)).toEqual(expected);
    expect(result.meta).toEqual({ created: 244, updated: 3, skipped: 0, failed: 3, not_processed: 0, total: 250, dry_run: false });
    expect(result).toMatchObject({ ok: true, stoppedBy: null });

    // Every row that ran points at the lead holding its own email.
    const ids = await leadIdsByEmail(tenant);
    expect(result.rows.map((row) => [row.status, row.lead_id, 'field' in row ? row.field : null])).toEqual(
      rows.map((_, n) => (failing.has(n) ? ['failed', null, 'tag_ids'] : [expected[n], ids.get(address(sameAs[n] ?? n)), null])),
    );
    expect(ids.size).toBe(244);
  });

  it('leaves the rows of a batch refused with 422 not_processed, each with its own messages, and goes on', async () => {
    const tenant = await createTenant(t.ctx.db);
    const { sent, fetch } = recordingFetch();
    const rows: LeadRow[] = Array.from({ length: 250 }, (_, n) => (n === 130 ? ({ name: 'No contact' } as LeadRow) : { name: `Row ${n}`, email: `v${n}@acme.test` }));

    const result = await clientFor(baseUrl, tenant, { fetch }).createLeads(rows, { enrich: false });

    expect(batchSizes(sent)).toEqual([100, 100, 50]);
    expect(result.meta).toMatchObject({ created: 150, not_processed: 100, total: 250 });
    expect(result).toMatchObject({ ok: false, stoppedBy: null });
    const row130 = result.rows[130]!;
    expect(row130).toMatchObject({ index: 130, status: 'not_processed', lead_id: null, errors: { email: [expect.any(String)] } });
    expect(row130.status === 'not_processed' && row130.reason.error).toBe('validation_failed');
    expect(result.rows[131]).toMatchObject({ index: 131, status: 'not_processed', errors: {} });
    expect(result.rows.slice(200).every((row) => row.status === 'created')).toBe(true);
  });

  it('stops at a refusal that is not about the rows (403) and reports every unsent row with it', async () => {
    const tenant = await createTenant(t.ctx.db, { scopes: ['leads:read'] });
    const { sent, fetch } = recordingFetch();
    const rows: LeadRow[] = Array.from({ length: 5 }, (_, n) => ({ name: `Row ${n}`, email: `s${n}@acme.test` }));

    const result = await clientFor(baseUrl, tenant, { fetch }).createLeads(rows, { batchSize: 2 });

    expect(sent).toHaveLength(1);
    expect(result.stoppedBy).toMatchObject({ error: 'insufficient_scope', required_scope: 'leads:write' });
    expect(result.rows.map((row) => [row.index, row.status])).toEqual([0, 1, 2, 3, 4].map((n) => [n, 'not_processed']));
    expect(result.meta.not_processed).toBe(5);
  });

  it('applies the switches to every batch (a dry run saves nothing)', async () => {
    const tenant = await createTenant(t.ctx.db);
    const { sent, fetch } = recordingFetch();
    const rows: LeadRow[] = Array.from({ length: 3 }, (_, n) => ({ name: `Row ${n}`, email: `d${n}@acme.test` }));

    const result = await clientFor(baseUrl, tenant, { fetch }).createLeads(rows, { batchSize: 2, dry_run: true, on_duplicate: 'skip' });

    expect(sent.map((request) => request.body)).toEqual([
      { dry_run: true, on_duplicate: 'skip', leads: rows.slice(0, 2) },
      { dry_run: true, on_duplicate: 'skip', leads: rows.slice(2) },
    ]);
    expect(result.meta).toMatchObject({ created: 3, dry_run: true });
    expect(result.rows.map((row) => row.lead_id)).toEqual([null, null, null]);
    expect((await leadIdsByEmail(tenant)).size).toBe(0);
  });

  it('with an idempotencyKey, running the same import again replays every batch instead of running it', async () => {
    const tenant = await createTenant(t.ctx.db);
    const { sent, fetch } = recordingFetch();
    const client = clientFor(baseUrl, tenant, { fetch });
    const rows: LeadRow[] = Array.from({ length: 3 }, (_, n) => ({ name: `Row ${n}`, email: `r${n}@acme.test` }));

    const first = await client.createLeads(rows, { batchSize: 2, idempotencyKey: 'import-2026-11-22' });
    const again = await client.createLeads(rows, { batchSize: 2, idempotencyKey: 'import-2026-11-22' });

    expect(sent.map((request) => request.idempotencyKey)).toEqual(['import-2026-11-22:0', 'import-2026-11-22:1', 'import-2026-11-22:0', 'import-2026-11-22:1']);
    expect(again.rows).toEqual(first.rows);
    expect(again.rows.map((row) => row.status)).toEqual(['created', 'created', 'created']);
    expect((await leadIdsByEmail(tenant)).size).toBe(3);
  });

  it('refuses a batch size outside 1..100 before sending anything', async () => {
    const tenant = await createTenant(t.ctx.db);
    const client = clientFor(baseUrl, tenant);
    await expect(client.createLeads([{ name: 'A', email: 'a@acme.test' }], { batchSize: 101 })).rejects.toThrow(RangeError);
    expect(await client.createLeads([])).toEqual({
      ok: true,
      rows: [],
      stoppedBy: null,
      meta: { created: 0, updated: 0, skipped: 0, failed: 0, not_processed: 0, total: 0, dry_run: false },
    });
  });
});
