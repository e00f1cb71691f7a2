import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { clientFor, recordingFetch, recordingSleep, startDroppingProxy } from '../support/client.js';
import { createTenant, type Tenant } from '../support/fixtures.js';

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
let baseUrl: string;
beforeAll(async () => {
  ({
    t,
    tenants: [tenant],
  } = bed);
  baseUrl = await t.listen();
});

let sequence = 0;
const email = () => `client${++sequence}-${Date.now()}@acme-robotics.test`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const leadsWith = async (address: string) =>
  t.ctx.db
    .selectFrom('leads')
    .select('id')
    .where('workspace_id', '=', tenant.workspaceId)
    .where(sql<boolean>`${address} = ANY(emails)`)
    .execute();

describe('typed calls against the service', () => {
  it('reads the key, tags and a lead; creates then updates a lead', async () => {
    const client = clientFor(baseUrl, tenant);
    const me = await client.me();
    expect(me).toMatchObject({ ok: true, status: 200, attempts: 1, data: { data: { workspace: { id: tenant.workspaceId }, rate_limit: { batch_max: 100 } } } });
    expect(me.requestId).toEqual(expect.any(String));

    const address = email();
    const created = await client.createLead({ name: 'Jane Doe', email: address, tags: ['Client'], enrich: false });
    if (!created.ok) throw new Error(`expected a lead, got ${JSON.stringify(created.error)}`);
    expect(created.status).toBe(201);
    expect(created.replayed).toBe(false);
    expect(created.data.meta.status).toBe('created');

    const updated = await client.createLead({ name: 'Jane D.', email: address });
    expect(updated).toMatchObject({ ok: true, status: 200, data: { meta: { status: 'updated' } } });

    const read = await client.getLead(created.data.data.id!);
    expect(read).toMatchObject({ ok: true, status: 200, data: { data: { id: created.data.data.id, name: 'Jane D.' } } });

    const tags = await client.listTags({ includeArchived: true });
    expect(tags.ok && tags.data.data.map((tag) => tag.name)).toContain('Client');
  });

  it('sends a UUID Idempotency-Key on every POST (the caller may choose it) and none on GET', async () => {
    const { sent, fetch } = recordingFetch();
    const client = clientFor(baseUrl, tenant, { fetch });
    await client.me();
    const first = await client.createLead({ name: 'Key One', email: email() });
    const batch = await client.createBatch({ leads: [{ name: 'Key Two', email: email() }] });
    const chosen = await client.createLead({ name: 'Key Three', email: email() }, { idempotencyKey: `order-${sequence}` });

    expect(sent.map((request) => [request.method, request.idempotencyKey])).toEqual([
      ['GET', null],
      ['POST', first.idempotencyKey],
      ['POST', batch.idempotencyKey],
      ['POST', `order-${sequence}`],
    ]);
    expect(first.idempotencyKey).toMatch(UUID);
    expect(batch.idempotencyKey).toMatch(UUID);
    expect(first.idempotencyKey).not.toBe(batch.idempotencyKey);
    expect(chosen.idempotencyKey).toBe(`order-${sequence}`);
  });

  it('returns a 422 typed, with `validation_failed` as its code, after one request', async () => {
    const { sent, fetch } = recordingFetch();
    // @ts-expect-error -- the contact rule is in the types too; this test sends the lead anyway.
    const result = await clientFor(baseUrl, tenant, { fetch }).createLead({ name: 'No Contact' });
    expect(sent).toHaveLength(1);
    if (result.ok) throw new Error('expected a 422');
    expect(result.status).toBe(422);
    switch (result.error.error) {
      case 'validation_failed':
        expect(result.error.errors.email).toEqual([expect.stringContaining('email')]);
        break;
      default:
        throw new Error(`unexpected error ${result.error.error}`);
    }
  });
});

describe('retries', () => {
  it('retries a POST whose connection dropped after the service processed it, with the same key: one lead, replayed answer', async () => {
    const proxy = await startDroppingProxy(Number(new URL(baseUrl).port));
    try {
      const { sent, fetch } = recordingFetch();
      const { waits, sleep } = recordingSleep();
      const address = email();
      const result = await clientFor(proxy.url, tenant, { fetch, sleep }).createLead({ name: 'Dropped Answer', email: address, enrich: false });

      expect(proxy.connections).toBe(2);
      expect(sent).toHaveLength(2);
      expect(sent[1]!.idempotencyKey).toBe(sent[0]!.idempotencyKey);
      expect(waits).toHaveLength(1);
      expect(result).toMatchObject({ ok: true, status: 201, replayed: true, attempts: 2 });
      expect(await leadsWith(address)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('never retries a 4xx other than 429: 400, 401, 403, 404 and both 409s take one request each', async () => {
    const readOnly = await createTenant(t.ctx.db, { scopes: ['tags:read'] });
    const { sent, fetch } = recordingFetch();
    const client = clientFor(baseUrl, tenant, { fetch });
    const address = email();
    await client.createLead({ name: 'Existing', email: address });
    sent.length = 0;

    const badKey = await clientFor(baseUrl, { ...tenant, token: 'lk0000000000_nope' }, { fetch }).me();
    const noScope = await clientFor(baseUrl, readOnly, { fetch }).createLead({ name: 'X', email: email() });
    const missing = await client.getLead(999_999_999);
    const duplicate = await client.createLead({ name: 'Again', email: address, on_duplicate: 'error' });
    await client.createLead({ name: 'Reuse', email: address }, { idempotencyKey: `reuse-${sequence}` });
    const reused = await client.createLead({ name: 'Reuse changed', email: address }, { idempotencyKey: `reuse-${sequence}` });
    const longKey = await client.createLead({ name: 'Long key', email: email() }, { idempotencyKey: 'k'.repeat(256) });

    expect([badKey, noScope, missing, duplicate, reused, longKey].map((result) => [result.status, !result.ok && result.error.error])).toEqual([
      [401, 'invalid_api_key'],
      [403, 'insufficient_scope'],
      [404, 'not_found'],
      [409, 'duplicate_lead'],
      [409, 'idempotency_key_reuse'],
      [400, 'invalid_idempotency_key'],
    ]);
    expect(sent).toHaveLength(7);
    expect(duplicate).toMatchObject({ ok: false, error: { error: 'duplicate_lead', matched_on: address } });
  });

  it('retries 503 and 500 answers, waiting Retry-After when the 503 gives one, then returns the service answer', async () => {
    const { sent, fetch } = recordingFetch([
      () => new Response('{"message":"maintenance"}', { status: 503, headers: { 'retry-after': '2', 'content-type': 'application/json' } }),
      () => new Response('upstream failed', { status: 500 }),
    ]);
    const { waits, sleep } = recordingSleep();
    const result = await clientFor(baseUrl, tenant, { fetch, sleep, backoffBaseMs: 100 }).me();
    expect(result).toMatchObject({ ok: true, status: 200, attempts: 3 });
    expect(sent).toHaveLength(3);
    expect(waits[0]).toBe(2000);
    expect(waits[1]).toBeGreaterThanOrEqual(0);
    expect(waits[1]).toBeLessThanOrEqual(200);
  });

  it('gives up after the attempt limit: the last 5xx is an unexpected_response', async () => {
    const failing = () => new Response('<html>bad gateway</html>', { status: 502 });
    const { sent, fetch } = recordingFetch([failing, failing, failing]);
    const { sleep } = recordingSleep();
    const result = await clientFor(baseUrl, tenant, { fetch, sleep, maxAttempts: 3 }).me();
    expect(sent).toHaveLength(3);
    expect(result).toMatchObject({ ok: false, status: 502, attempts: 3, error: { error: 'unexpected_response', body: '<html>bad gateway</html>' } });
  });

  it('retries network errors with capped, fully jittered backoff and reports network_error at the end', async () => {
    // A server that drops every connection: a network error on every attempt, on a port held
    // for the whole test (a port closed after use could be taken by another process meanwhile).
    const dropping = createServer((socket) => socket.destroy());
    dropping.listen(0, '127.0.0.1');
    await once(dropping, 'listening');
    const { port } = dropping.address() as AddressInfo;

    const { waits, sleep } = recordingSleep();
    const result = await clientFor(`http://127.0.0.1:${port}`, tenant, { sleep, maxAttempts: 5, backoffBaseMs: 100, backoffCapMs: 300 })
      .me()
      .finally(() => new Promise<void>((resolve) => dropping.close(() => resolve())));
    expect(result).toMatchObject({ ok: false, status: null, attempts: 5, error: { error: 'network_error', message: expect.stringContaining('5 attempts') } });
    expect(waits).toHaveLength(4);
    [100, 200, 300, 300].forEach((ceiling, index) => {
      expect(waits[index]).toBeGreaterThanOrEqual(0);
      expect(waits[index]).toBeLessThanOrEqual(ceiling);
    });
  });

  it('abandons an attempt after timeoutMs and retries it', async () => {
    const held = new Set<Socket>();
    const silent = createServer((socket) => {
      held.add(socket);
      socket.on('error', () => {});
    });
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const { port } = silent.address() as AddressInfo;
      const { sleep } = recordingSleep();
      const started = Date.now();
      const result = await clientFor(`http://127.0.0.1:${port}`, tenant, { sleep, maxAttempts: 2, timeoutMs: 150 }).me();
      expect(result).toMatchObject({ ok: false, status: null, attempts: 2, error: { error: 'network_error' } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
    }
  });
});
