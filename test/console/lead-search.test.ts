import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { postBatch, uniqueName } from '../support/requests.js';
import { startConsoleBed, type ConsoleSession } from './support.js';

// The Leads page's search, page by page: a lead found by any way (a word of its name, part of
// an email, its company's domain) is on exactly one page, newest first, with or without a tag
// filter, however the ways share the matches out between them.

let app: TestApp;
let tenant: Tenant;
let admin: ConsoleSession;

beforeAll(async () => {
  ({ app, tenant, admin } = await startConsoleBed());
});
afterAll(async () => {
  await app.close();
});

/** Every lead the Leads page lists for `query`, following its next-page links. */
async function listed(query: Record<string, string>): Promise<number[]> {
  const ids: number[] = [];
  for (let before: string | undefined; ; ) {
    const page = await admin.get(`/console/leads?${new URLSearchParams({ ...query, ...(before ? { before } : {}) })}`);
    expect(page.status).toBe(200);
    ids.push(...[...page.text.matchAll(/<td><a href="\/console\/leads\/(\d+)">/g)].map((match) => Number(match[1])));
    before = /[?&;]before=(\d+)/.exec(page.text)?.[1];
    if (!before) return ids;
  }
}

describe("the Leads page's search", () => {
  it('lists every lead a term finds by name, email or company domain once, newest first, across pages, also with a tag', async () => {
    const word = uniqueName('zq');
    const kinds = ['name', 'email', 'two-emails', 'company', 'none'] as const;
    // Interleaved, so that each page holds leads found by every way.
    const rows = Array.from({ length: 130 }, (_, n) => {
      const kind = kinds[n % kinds.length]!;
      const own = `${uniqueName('p')}@mail.test`;
      return {
        kind,
        tagged: n % 3 === 0,
        lead: {
          name: kind === 'name' ? `Ann ${word} ${n}` : `Person ${n}`,
          email: kind === 'email' || kind === 'two-emails' ? `${word}.${n}@mail.test` : own,
          ...(kind === 'two-emails' ? { emails: [`${n}.${word}@other.test`] } : {}),
          ...(kind === 'company' ? { company: { website: `https://${word}-${n}.example` } } : {}),
          tags: n % 3 === 0 ? ['vip'] : [],
        },
      };
    });
    const ids: number[] = [];
    for (let start = 0; start < rows.length; start += 100) {
      const answer = await postBatch(app, tenant, { leads: rows.slice(start, start + 100).map((row) => row.lead) });
      expect(answer.body.meta).toMatchObject({ failed: 0 });
      ids.push(...answer.body.data.map((row: { lead_id: number }) => row.lead_id));
    }
    const found = (withTag: boolean) =>
      rows
        .map((row, index) => ({ ...row, id: ids[index]! }))
        .filter((row) => row.kind !== 'none' && (!withTag || row.tagged))
        .map((row) => row.id)
        .sort((a, b) => b - a);

    expect(found(false).length).toBeGreaterThan(100);
    expect(await listed({ search: word })).toEqual(found(false));
    const vip = /<option value="(\d+)"[^>]*>vip</.exec((await admin.get('/console/leads')).text)?.[1];
    expect(vip).toBeDefined();
    expect(await listed({ search: word, tag: vip! })).toEqual(found(true));
  });
});
