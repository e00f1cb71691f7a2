import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parse } from 'yaml';
import { startTestApp, type TestApp } from '../support/app.js';

// The reference page at /docs is Redoc rendering /openapi.yaml in the browser. Here the same
// Redoc release (its library build: the models and components the standalone bundle is made
// of) loads the document the service serves and renders it (test/support/redoc-model.mjs),
// to show that every webhook of the document is in the reference: in the side menu under its
// tag, with its headers and request bodies, and in the rendered page.

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../..');

interface MenuItem {
  type: string;
  id: string;
  name: string;
  isWebhook: boolean;
  httpVerb: string | null;
  parameters: string[];
  mediaTypes: string[] | null;
  security: string[][];
  items: MenuItem[];
}
type Document = { webhooks: Record<string, Record<string, { tags: string[]; summary: string }>>; info: { description: string } };

let t: TestApp;
let document: Document;
let redoc: { menu: MenuItem[]; html: string };
beforeAll(async () => {
  t = await startTestApp();
  const served = await t.http.get('/openapi.yaml');
  expect(served.status).toBe(200);
  document = parse(served.text) as Document;
  const run = spawnSync(process.execPath, [path.join(ROOT, 'test/support/redoc-model.mjs')], { input: served.text, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  redoc = JSON.parse(run.stdout) as typeof redoc;
}, 60_000);
afterAll(() => t.close());

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const documentedWebhooks = () =>
  Object.entries(document.webhooks).flatMap(([name, item]) => OPERATION_METHODS.filter((method) => item[method]).map((method) => ({ name, method, ...item[method]! })));
const flat = (items: MenuItem[]): MenuItem[] => items.flatMap((item) => [item, ...flat(item.items)]);

describe('the reference at /docs shows the webhooks', () => {
  it('lists every webhook operation in the side menu under its tag, as a webhook', () => {
    const webhooks = documentedWebhooks();
    expect(webhooks.length).toBe(21);
    for (const webhook of webhooks) {
      const tag = redoc.menu.find((item) => item.type === 'tag' && item.name === webhook.tags[0]);
      const shown = tag?.items.find((item) => item.name === webhook.summary);
      expect({ webhook: `${webhook.name} ${webhook.method}`, shown: shown && { isWebhook: shown.isWebhook, verb: shown.httpVerb } }).toEqual({
        webhook: `${webhook.name} ${webhook.method}`,
        shown: { isWebhook: true, verb: webhook.method },
      });
    }
  });

  it('shows the signature headers, both encodings, the query form and the connector authentication', () => {
    const items = flat(redoc.menu);
    const push = items.find((item) => item.isWebhook && item.id.endsWith('/lead/post'))!;
    expect(push.parameters).toEqual(['header webhook-id', 'header webhook-timestamp', 'header webhook-signature', 'header User-Agent']);
    expect(push.mediaTypes).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    expect(push.security).toEqual([[], ['ConnectorBearerToken'], ['ConnectorBasicAuth']]);
    const fetched = items.find((item) => item.isWebhook && item.id.endsWith('/lead/get'))!;
    expect(fetched.parameters).toContain('query payload');
    expect(fetched.mediaTypes).toBeNull();
  });

  it('renders them, and the links of the introduction lead to them', () => {
    const tagIds = redoc.menu.filter((item) => item.type === 'tag' && item.name.startsWith('Webhook: ')).map((item) => item.id);
    expect(tagIds).toHaveLength(5);
    for (const id of tagIds) {
      expect(redoc.html).toContain(`data-section-id="${id}"`);
      expect(document.info.description).toContain(`(#${id})`);
    }
    for (const webhook of documentedWebhooks()) expect(redoc.html).toContain(webhook.summary);
    expect(redoc.html).toContain('webhook-signature');
    expect(redoc.html).toContain('application/x-www-form-urlencoded');
  });
});
