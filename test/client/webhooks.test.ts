import { beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, verifyWebhookForm, WebhookVerificationError, type WebhookEvent, type WebhookRefusal } from '../../src/client/index.js';
import { newSigningSecret, signatureHeaders } from '../../src/deliveries/attempt.js';
import type { TestApp } from '../support/app.js';
import { clientFor } from '../support/client.js';
import { createTenant } from '../support/fixtures.js';
import { cli, drain, outboundTestBed } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

const secret = newSigningSecret();
const body = JSON.stringify({ id: 7, name: 'Jane Doe', event: 'lead', lead_id: 7, sent_at: '2026-11-23T10:00:51.882000Z' });
/** Signed the way the service's worker signs an attempt. */
const signed = (content: string, at = new Date(), key = secret) => signatureHeaders('msg_0123456789abcdef', key, content, at);

async function refusal(verify: () => Promise<unknown>): Promise<WebhookRefusal | 'accepted'> {
  try {
    await verify();
    return 'accepted';
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason;
    throw error;
  }
}

describe('verifyWebhook', () => {
  it('returns the typed event of a genuine delivery, whatever the case of the header names', async () => {
    const event: WebhookEvent = await verifyWebhook(secret, signed(body), body);
    expect(event).toEqual(JSON.parse(body));
    const shouting = Object.fromEntries(Object.entries(signed(body)).map(([name, value]) => [name.toUpperCase(), value]));
    expect(await verifyWebhook(secret, new Headers(shouting), Buffer.from(body))).toEqual(event);
  });

  it('refuses a forged signature, another secret, an altered body, a stale or future timestamp, missing headers', async () => {
    const headers = signed(body);
    const tenMinutes = 10 * 60 * 1000;
    expect(await refusal(() => verifyWebhook(secret, { ...headers, 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}` }, body))).toBe('invalid_signature');
    expect(await refusal(() => verifyWebhook(newSigningSecret(), headers, body))).toBe('invalid_signature');
    expect(await refusal(() => verifyWebhook(secret, headers, body.replace('Jane', 'Joan')))).toBe('invalid_signature');
    expect(await refusal(() => verifyWebhook(secret, signed(body, new Date(Date.now() - tenMinutes)), body))).toBe('stale_timestamp');
    expect(await refusal(() => verifyWebhook(secret, signed(body, new Date(Date.now() + tenMinutes)), body))).toBe('stale_timestamp');
    const { 'webhook-signature': _dropped, ...unsigned } = headers;
    expect(await refusal(() => verifyWebhook(secret, unsigned, body))).toBe('missing_headers');
    await expect(verifyWebhook(secret, {}, body)).rejects.toThrow('missing signature headers: webhook-id, webhook-timestamp, webhook-signature');
  });

  it('refuses a stale delivery even when its signature is right (a replay)', async () => {
    const stale = new Date(Date.now() - 6 * 60 * 1000);
    await expect(verifyWebhook(secret, signed(body, stale), body)).rejects.toThrow(/s old .*tolerance 300 s/);
  });

  it('refuses signed content that is not one of the service events', async () => {
    const notAnEvent = JSON.stringify({ hello: 'world' });
    expect(await refusal(() => verifyWebhook(secret, signed(notAnEvent), notAnEvent))).toBe('unexpected_payload');
    expect(await refusal(() => verifyWebhook(secret, signed('a=1'), 'a=1'))).toBe('unexpected_payload');
  });

  it('verifies form-encoded and query-string deliveries with verifyWebhookForm', async () => {
    const query = 'event=lead&lead_id=7&tags=VIP,Hot';
    expect(Object.fromEntries(await verifyWebhookForm(secret, signed(query), query))).toEqual({ event: 'lead', lead_id: '7', tags: 'VIP,Hot' });
    expect(await refusal(() => verifyWebhookForm(secret, signed(query), `${query}&admin=1`))).toBe('invalid_signature');
  });

  it('agrees with the standardwebhooks package on what it signs', async () => {
    const headers = signed(body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(await verifyWebhook(secret, headers, body));
  });

  it('rejects a secret that is not a whsec_ key with a clear TypeError', async () => {
    await expect(verifyWebhook('', signed(body), body)).rejects.toThrow(TypeError);
  });
});

describe('a real delivery of the service, verified by the client', () => {
  it('a lead created through the client fires a workflow whose signed delivery verifies as a workflow event', async () => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await cli<{ id: number; signing_secret: string }>(t, [
      'workflow',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--trigger',
      'lead_created',
      '--url',
      `${receiver.url}/hooks`,
      '--field',
      'source=client-test',
    ]);
    const created = await clientFor(await t.listen(), tenant).createLead({ name: 'Grace Hopper', email: 'grace@navy.test', enrich: false });
    if (!created.ok) throw new Error(JSON.stringify(created.error));
    await drain(t);

    expect(receiver.requests).toHaveLength(1);
    const delivery = receiver.requests[0]!;
    const event = await verifyWebhook(workflow.signing_secret, delivery.headers as Record<string, string>, delivery.body);
    expect(event).toEqual({ event: 'workflow', lead_id: created.data.data.id, workflow_id: workflow.id, sent_at: expect.any(String), source: 'client-test' });
    expect(await refusal(() => verifyWebhook(newSigningSecret(), delivery.headers as Record<string, string>, delivery.body))).toBe('invalid_signature');
  });
});
