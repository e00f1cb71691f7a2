import { describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { contractDocument, follow } from '../support/contract-document.js';
import type { ReceivedRequest } from '../support/receiver.js';
import { WEBHOOK_OF_SENDER, webhookProblems } from '../support/webhook-contract.js';

// The check every test receiver applies to the deliveries it gets (test/support/receiver.ts):
// the document's own examples pass it, and each kind of drift fails it.

interface Example {
  value: Record<string, unknown>;
}
interface Media {
  examples: Record<string, Example>;
}
interface Parameter {
  in: string;
  name: string;
  example?: unknown;
  $ref?: string;
}
type PathItem = Record<string, { requestBody?: { $ref?: string; content?: Record<string, Media> }; parameters?: Parameter[] }> & { parameters: Parameter[] };

const webhooks = contractDocument.webhooks as Record<string, PathItem>;
const BODY_METHODS = ['post', 'put', 'patch'];
const QUERY_METHODS = ['get', 'delete'];

/** The headers every delivery carries, from the document's examples of its header parameters. */
function exampleHeaders(name: string): Record<string, string> {
  return Object.fromEntries(webhooks[name]!.parameters.map((parameter) => follow(parameter)).map((parameter) => [parameter.name.toLowerCase(), String(parameter.example)]));
}

const request = (method: string, headers: Record<string, string>, body = '', query = ''): ReceivedRequest => ({ method, path: '/hook', query, headers, body, receivedAt: 0 });

const encode = (contentType: string, value: Record<string, unknown>) =>
  contentType === 'application/json' ? JSON.stringify(value) : new URLSearchParams(value as Record<string, string>).toString();

/** Every example of the document as the delivery it describes, for every method it has (`leadErased` is always POST). */
function documentedDeliveries(): Array<[string, string, string, ReceivedRequest]> {
  return Object.keys(webhooks).flatMap((name) => {
    const headers = exampleHeaders(name);
    const has = (method: string) => webhooks[name]![method] !== undefined;
    const withBody = BODY_METHODS.filter(has).flatMap((method) => {
      const content = follow(webhooks[name]![method]!.requestBody!).content!;
      return Object.entries(content).flatMap(([contentType, media]) =>
        Object.entries(media.examples).map(
          ([example, { value }]) =>
            [name, method, `${contentType} ${example}`, request(method.toUpperCase(), { ...headers, 'content-type': contentType }, encode(contentType, value))] as [
              string,
              string,
              string,
              ReceivedRequest,
            ],
        ),
      );
    });
    const withQuery = QUERY_METHODS.filter(has).map((method) => {
      const query = follow(webhooks[name]![method]!.parameters![0]!);
      return [name, method, 'query', request(method.toUpperCase(), headers, '', encode('form', query.example as Record<string, unknown>))] as [
        string,
        string,
        string,
        ReceivedRequest,
      ];
    });
    return [...withBody, ...withQuery];
  });
}

describe('the webhook check of the test receivers', () => {
  it("knows a webhook for every sender, and every webhook is some sender's", () => {
    expect(new Set(Object.values(WEBHOOK_OF_SENDER))).toEqual(new Set(Object.keys(webhooks)));
  });

  it.each(documentedDeliveries())("passes the document's own example: %s %s %s", (name, _method, _example, delivery) => {
    expect(webhookProblems(name, delivery)).toEqual([]);
  });

  it('the signature example of the document is the signature of its connector push example', () => {
    const info = (contractDocument as unknown as { info: { description: string } }).info.description;
    const secret = /with the secret `(whsec_[A-Za-z0-9+/=]+)`/.exec(info)?.[1];
    const example = follow(webhooks.lead!.post!.requestBody!).content!['application/json']!.examples.defaultFieldSet!.value;
    const { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature } = exampleHeaders('lead');
    expect(info).toContain(`\`webhook-id: ${id}\``);
    expect(info).toContain(`\`webhook-timestamp: ${timestamp}\``);
    expect(info).toContain(`\`${signature}\``);
    expect(new Webhook(secret!).sign(id!, new Date(Number(timestamp) * 1000), JSON.stringify(example))).toBe(signature);
  });

  const headers = exampleHeaders('lead');
  const json = { 'content-type': 'application/json' };
  const pushed = {
    id: 4211,
    name: 'Jane Doe',
    email: null,
    phone: null,
    job_title: null,
    company: null,
    stage: 'new',
    tags: [],
    event: 'lead',
    lead_id: 4211,
    sent_at: '2026-11-23T10:00:51.882000Z',
  };
  const post = (name: string, body: object, extra: Record<string, string> = json) => webhookProblems(name, request('POST', { ...headers, ...extra }, JSON.stringify(body)));

  it('fails a renamed or retyped envelope key, a foreign event, a badly formatted timestamp', () => {
    const { lead_id: _leadId, ...withoutLeadId } = pushed;
    expect(post('lead', { ...withoutLeadId, leadId: 4211 })).toEqual(["body must have required property 'lead_id'"]);
    expect(post('lead', { ...pushed, lead_id: '4211' })).toEqual(['body/lead_id must be integer']);
    expect(post('lead', { ...pushed, event: 'workflow' })).toEqual(['body/event must be equal to constant']);
    expect(post('lead', { ...pushed, sent_at: '2026-11-23T10:00:51.882Z' })).toContainEqual(expect.stringMatching(/^body\/sent_at must match pattern/));
    expect(post('workflowCustomUrl', { event: 'workflow', lead_id: 4211, sent_at: pushed.sent_at, note: 'x' })).toEqual(["body must have required property 'workflow_id'"]);
    expect(post('workflowCustomUrl', { event: 'workflow', workflow_id: 12, sent_at: pushed.sent_at, count: 3 })).toEqual(['body/count must be string']);
    expect(post('test', { ...pushed, event: 'test' })).toEqual(['body/lead_id must be null']);
  });

  it('fails a wrong content type, a missing or malformed signature header, a form key sent twice', () => {
    expect(post('lead', pushed, { 'content-type': 'text/plain' })).toEqual(['content type "text/plain" is none of application/json, application/x-www-form-urlencoded']);
    const { 'webhook-signature': _signature, ...unsigned } = headers;
    expect(webhookProblems('lead', request('POST', { ...unsigned, ...json }, JSON.stringify(pushed)))).toEqual(['header webhook-signature is missing']);
    expect(post('lead', pushed, { ...json, 'webhook-signature': 'v2,abc' })).toEqual([expect.stringMatching(/^header webhook-signature must match pattern/)]);
    const form = 'event=lead&lead_id=4211&sent_at=2026-11-23T10%3A00%3A51.882000Z&tags=a&tags=b';
    expect(webhookProblems('lead', request('PUT', { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, form))).toEqual(['key "tags" sent twice']);
  });

  it('fails a GET with a body, a query without the envelope, a method no webhook has', () => {
    const query = 'event=lead&lead_id=4211&sent_at=2026-11-23T10%3A00%3A51.882000Z';
    expect(webhookProblems('lead', request('GET', headers, '', query))).toEqual([]);
    expect(webhookProblems('lead', request('GET', headers, '{}', query))).toEqual(['a GET delivery carries a body']);
    expect(webhookProblems('lead', request('DELETE', headers, '', 'event=lead&sent_at=2026-11-23T10%3A00%3A51.882000Z'))).toEqual([
      "query (payload) must have required property 'lead_id'",
    ]);
    expect(webhookProblems('lead', request('HEAD', headers))).toEqual(['webhook lead documents no HEAD']);
  });
});
