import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parse } from 'csv-parse/sync';
import type { Browser, Page } from 'playwright-core';
import { cliJson } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/ports.js';
import { baseEnvironment, startService, type ServiceProcess } from '../support/service.js';
import { browserAvailable, launchBrowser, seriousViolations, wordsBrokenAt360 } from './browser.js';

// Import CSV in a real browser, through `npm start` (its worker runs the job): upload, mapping,
// preview, progress, results; then Export CSV of a search against the API's reads.

const maybe = browserAvailable() ? describe : describe.skip;

let database: TestDatabase;
let service: ServiceProcess;
let browser: Browser;
let page: Page;
let base: string;
let demo: { workspace: { id: number }; user: { id: number }; key: { token: string } };

const cli = <T = any>(args: string[]) => cliJson<T>(database.url, args, { PUBLIC_URL: base });
const FILE =
  'Full name,E-mail,Phone,Employer,Notes,Internal id,Tags\n' +
  'Ada Lovelace,ada@engines.test,,Analytical Engines,"first, programmer",A1,pioneer\n' +
  'Charles Babbage,charles@engines.test,+44 20 7946 0000,Analytical Engines,,A2,\n' +
  'Ada Again,ADA@engines.test,,,,A3,\n' +
  'Nobody Reachable,,,,,A4,\n';

maybe('Import CSV and Export CSV in a browser', () => {
  beforeAll(async () => {
    database = await createTestDatabase();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env = { ...baseEnvironment(), PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: base, DATABASE_URL: database.url, LOG_LEVEL: 'info', OUTBOX_POLL_MS: '200' };
    service = startService('npm', ['start'], { env });
    await service.waitForLog('Lead Intake API listening', 120_000);
    demo = await cli(['demo']);
    browser = await launchBrowser();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    const { url } = await cli<{ url: string }>(['console', 'link', '--user', String(demo.user.id)]);
    await page.goto(url);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await service?.stop('SIGTERM');
    await database?.drop();
  }, 60_000);

  it('maps and ignores columns, previews, follows the progress to the end and downloads the results', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Leads', exact: true }).click();
    await page.getByRole('link', { name: 'Import CSV' }).click();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('CSV file').setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(FILE) });
    await page.getByRole('button', { name: 'Upload' }).click();

    await page.getByText('separated by comma').waitFor();
    expect(await page.getByLabel('Map column E-mail').inputValue()).toBe('email');
    expect(await page.getByLabel('Map column Internal id').inputValue()).toBe('ignore');
    await page.getByLabel('Map column Employer').selectOption('company.name');
    await page.getByLabel('Map column Notes').selectOption('custom_fields');
    await page.getByLabel('Tags to add to every row').fill('trade-show');
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByRole('region', { name: 'Preview' });
    await preview.waitFor();
    expect(await preview.locator('tbody tr').allInnerTexts()).toEqual([
      expect.stringMatching(/^1\s+created/),
      expect.stringMatching(/^2\s+created/),
      expect.stringMatching(/^3\s+created/),
      expect.stringMatching(/^4\s+failed\s+This row has no contact detail/),
    ]);
    expect(await cli(['lead', 'list', '--workspace', String(demo.workspace.id), '--format', 'json'])).toEqual([]);

    await page.getByRole('button', { name: 'Start import' }).click();
    const progress = page.getByRole('progressbar', { name: 'Import progress' });
    await progress.waitFor();
    // The page refreshes itself until the worker is done.
    await page.getByRole('link', { name: 'Download results' }).waitFor({ timeout: 30_000 });
    expect([await progress.getAttribute('value'), await progress.getAttribute('max')]).toEqual(['4', '4']);
    await expect(page.locator('.counts').innerText()).resolves.toMatch(/2\s*created\s*1\s*updated\s*0\s*skipped\s*1\s*failed/);
    expect(await seriousViolations(page)).toEqual([]);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download results' }).click()]);
    const results = parse(await streamText(await download.createReadStream()), { bom: true, columns: true }) as Array<Record<string, string>>;
    expect(results.map((row) => [row['Full name'], row.status, row.lead_id !== '', row.error])).toEqual([
      ['Ada Lovelace', 'created', true, ''],
      ['Charles Babbage', 'created', true, ''],
      ['Ada Again', 'updated', true, ''],
      ['Nobody Reachable', 'failed', false, expect.stringContaining('no contact detail')],
    ]);
    expect(results[0]!.lead_id).toBe(results[2]!.lead_id);
  }, 90_000);

  it('exports the leads a search finds, all pages, as the API reads them', async () => {
    await page.goto(`${base}/console/leads`);
    await page.getByLabel('Search').fill('engines');
    await page.getByRole('button', { name: 'Search leads' }).click();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    const rows = parse(await streamText(await download.createReadStream()), { bom: true, columns: true }) as Array<Record<string, string>>;
    const read = async (id: string) =>
      ((await (await fetch(`${base}/api/v1/leads/${id}`, { headers: { authorization: `Bearer ${demo.key.token}` } })).json()) as { data: any }).data;
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      const lead = await read(row.id!);
      expect(row).toMatchObject({
        name: lead.name,
        emails: lead.emails.join('; '),
        phones: lead.phones.join('; '),
        tags: lead.tags.map((tag: { name: string }) => tag.name).join('; '),
        'company.name': lead.company.name,
        source: 'import',
      });
    }
  }, 60_000);

  it('reads every list at 360 px with no word of a header or cell broken across lines, and axe still passes', async () => {
    await cli(['connector', 'create', '--workspace', String(demo.workspace.id), '--url', 'https://crm.example.com/api/v2/leads/incoming-webhook-endpoint']);
    for (const link of ['Leads', 'Connectors', 'Workflows', 'Deliveries', 'API keys', 'Tags', 'Companies', 'Members']) {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).click();
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      expect([link, await wordsBrokenAt360(page), await seriousViolations(page)]).toEqual([link, [], []]);
    }
  }, 60_000);
});

async function streamText(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}
