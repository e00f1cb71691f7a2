import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { parse } from 'csv-parse/sync';
import { sql } from 'kysely';
import { cliError, cliJson, runCli } from '../support/cli.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { CONSOLE_ORIGIN, http, signInByLink } from '../console/support.js';
import type { TestApp } from '../support/app.js';
import { createImport, DEFAULT_SWITCHES, describeColumns, importWriteGroups, mappingOf, runDueImport, showImport, startImport } from '../../src/lead-imports/service.js';

// CSV imports and the lead list through the CLI as an operator meets them, checked against the
// API's reads; and a worker that stops between a chunk's writes and its record, resumed.

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
const folder = mkdtempSync(path.join(tmpdir(), 'lead-import-'));

function csvFile(name: string, text: string | Buffer): string {
  const file = path.join(folder, name);
  writeFileSync(file, text);
  return file;
}

const cli = <T = any>(args: string[]) => cliJson<T>(t.databaseUrl, args);
const readLead = async (id: number) => (await t.http.get(`/api/v1/leads/${id}`).set(tenant.auth)).body.data;

beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

describe('lead import (CLI)', () => {
  it('maps and ignores columns, updates a duplicate, fails a row without contact, tags rows, and its leads read back from the API as imported', async () => {
    const file = csvFile(
      'people.csv',
      '\ufeffFull name;E-mail;Phone;Company;Website;Notes;Internal;Tags\n' +
        'Jane Smith;jane@smith-import.test;;Smith & Co;smith-import.test;"likes ""quotes""; and semicolons";x1;vip\n' +
        'John Doe;;+1 415 555 0100;;;;x2;\n' +
        'Jane Again;JANE@smith-import.test;;;;;x3;\n' +
        'No Contact;;;;;;x4;\n',
    );
    const job = await cli(['lead', 'import', '--workspace', String(tenant.workspaceId), '--file', file, '--map', 'Notes=custom_fields', '--map', 'Internal=ignore']);
    expect(job).toMatchObject({ status: 'done', delimiter: 'semicolon', total: 4, done: 4, created: 2, updated: 1, skipped: 0, failed: 1 });
    expect(job.mapping).toEqual(['name', 'email', 'phone', 'company.name', 'company.website', 'custom_fields', 'ignore', 'tags']);

    const rows = await t.ctx.db.selectFrom('leads').where('workspace_id', '=', tenant.workspaceId).select(['id', 'source']).orderBy('id').execute();
    expect(rows.map((row) => row.source)).toEqual(['import', 'import']);
    const jane = await readLead(Number(rows[0]!.id));
    expect(jane).toMatchObject({ name: 'Jane Again', emails: ['jane@smith-import.test'], source: 'import', custom_fields: { notes: 'likes "quotes"; and semicolons' } });
    expect(jane.tags.map((tag: { name: string }) => tag.name)).toEqual(['vip']);
    expect(jane.company).toMatchObject({ name: 'Smith & Co', website: 'https://smith-import.test' });

    // The list finds Jane by a word of her name, a part of her email and her company's domain, John by his phone's digits.
    const ids = (leads: Array<{ id: number }>) => leads.map((lead) => lead.id);
    for (const search of ['smith', 'again', 'jane@smith', 'smith-import.test']) {
      expect([search, ids(await cli(['lead', 'list', '--workspace', String(tenant.workspaceId), '--search', search, '--format', 'json']))]).toEqual([search, [jane.id]]);
    }
    const john = await cli(['lead', 'list', '--workspace', String(tenant.workspaceId), '--search', '555-0100', '--format', 'json']);
    expect(john).toEqual([await readLead(Number(rows[1]!.id))]);
    expect(await cli(['lead', 'list', '--workspace', String(tenant.workspaceId), '--tag', 'vip', '--format', 'json'])).toEqual([jane]);

    const listed = await runCli(['lead', 'list', '--workspace', String(tenant.workspaceId), '--format', 'csv'], { DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'warn' });
    const [header, ...csvRows] = parse(listed.stdout, { bom: true }) as string[][];
    expect(header).toContain('custom_fields.notes');
    expect(csvRows.map((row) => [row[0], row[1], row[2], row[header!.indexOf('tags')]])).toEqual([
      [String(rows[1]!.id), 'John Doe', '', ''],
      [String(jane.id), 'Jane Again', 'jane@smith-import.test', 'vip'],
    ]);
  }, 180_000);

  it('refuses a file that is not UTF-8, has a row wider than its header, or a mapping without a contact column, and keeps nothing', async () => {
    const workspace = String(tenant.workspaceId);
    const before = await t.ctx.db
      .selectFrom('leads')
      .select(sql<number>`count(*)::int`.as('n'))
      .executeTakeFirstOrThrow();
    const refusals = [
      await cliError(t.databaseUrl, ['lead', 'import', '--workspace', workspace, '--file', csvFile('latin1.csv', Buffer.from('Name,Email\nJos\xe9,jose@x.test\n', 'latin1'))]),
      await cliError(t.databaseUrl, ['lead', 'import', '--workspace', workspace, '--file', csvFile('wide.csv', 'Name,Email\nA,a@x.test,extra\n')]),
      await cliError(t.databaseUrl, ['lead', 'import', '--workspace', workspace, '--file', csvFile('nocontact.csv', 'Name,Email\nA,a@x.test\n'), '--map', 'Email=ignore']),
    ];
    expect(refusals.map((refusal) => refusal.message)).toEqual([
      expect.stringContaining('not UTF-8'),
      expect.stringContaining('more fields than the header'),
      expect.stringContaining('contact detail'),
    ]);
    const after = await t.ctx.db
      .selectFrom('leads')
      .select(sql<number>`count(*)::int`.as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  }, 180_000);
});

describe('Import CSV (console) with bad input', () => {
  it('answers a page saying what is wrong for a binary file, a file with no rows, one over 20 MB and a mapping without name, and keeps nothing', async () => {
    const admin = await signInByLink(t, tenant.userId);
    const upload = (name: string, bytes: Buffer) =>
      http(t).post('/console/leads/import').set('Cookie', admin.cookie).set('Origin', CONSOLE_ORIGIN).field('_csrf', admin.csrf).attach('file', bytes, name);
    const imports = async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM lead_imports WHERE workspace_id = ${tenant.workspaceId}`.execute(t.ctx.db)).rows[0]!.n;
    const before = await imports();
    const answers = [
      await upload('photo.csv', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01])),
      await upload('header-only.csv', Buffer.from('Name,Email\n')),
      await upload('huge.csv', Buffer.alloc(20 * 1024 * 1024 + 1, 'a')),
    ];
    expect(answers.map((answer) => [answer.status, /<p[^>]*role="alert"[^>]*>([^<]*)/.exec(answer.text)?.[1] ?? answer.text.slice(0, 200)])).toEqual([
      [400, expect.stringContaining('not a CSV text file')],
      [400, expect.stringContaining('no rows')],
      [413, expect.stringContaining('larger than 20 MB')],
    ]);
    expect(await imports()).toBe(before);

    const uploaded = await upload('people.csv', Buffer.from('Name,Email\nAda,ada@bad-mapping.test\n'));
    expect(uploaded.status).toBe(303);
    const mapping = await admin.post(uploaded.headers.location!.replace(/^.*\/console/, '/console'), { 'map-0': 'ignore', 'map-1': 'email', action: 'start' });
    expect([mapping.status, mapping.text]).toEqual([400, expect.stringContaining('Map a column to name')]);
    expect((await admin.get(uploaded.headers.location!.replace(/^.*\/console/, '/console'))).text).toContain('Start import');
  });
});

describe('an import whose worker stops between a chunk and its record', () => {
  it('resumes from its first row not recorded, and the rows sent again are not written twice', async () => {
    const { db } = t.ctx;
    const people = Array.from({ length: 150 }, (_, index) => `Person ${index},person${index}@resume.test`);
    const job = await createImport(db, tenant.workspaceId, null, 'resume.csv', Buffer.from(`Name,Email\n${people.join('\n')}\n`));
    const mapping = mappingOf(
      job,
      (await describeColumns(db, job)).map((column) => column.guess),
    );
    await startImport(db, job, mapping, DEFAULT_SWITCHES);
    const groups = importWriteGroups(db, t.ctx.logger);

    // The first chunk's leads commit, then the worker "dies" before its record does: a row's
    // record (its status) fails a check that no row may have one. A constraint, not a trigger,
    // so that it stops the worker on Citus too (no triggers on distributed tables).
    await sql`ALTER TABLE lead_import_rows ADD CONSTRAINT worker_stopped CHECK (status IS NULL) NOT VALID`.execute(db);
    await expect(runDueImport(groups, db, tenant.workspaceId, 'worker-a', 60_000, () => false)).rejects.toThrow('worker_stopped');
    await sql`ALTER TABLE lead_import_rows DROP CONSTRAINT worker_stopped`.execute(db);
    expect(await runDueImport(groups, db, tenant.workspaceId, 'worker-b', 60_000, () => false)).toBe(0);

    // Its lease runs out; another worker takes the job over.
    await sql`UPDATE lead_imports SET locked_until = now() - interval '1 second' WHERE id = ${job.id}`.execute(db);
    expect(await runDueImport(groups, db, tenant.workspaceId, 'worker-b', 60_000, () => false)).toBe(150);
    expect(await showImport(db, tenant.workspaceId, job.id)).toMatchObject({ status: 'done', done: 150, created: 150, updated: 0, failed: 0 });
    const leads = await sql<{ n: number }>`SELECT count(*)::int AS n FROM lead_identities WHERE workspace_id = ${tenant.workspaceId} AND value LIKE '%@resume.test'`.execute(db);
    expect(leads.rows[0]!.n).toBe(150);
  });

  it('is cancelled from its page: no worker runs it, and its results say which rows did not run', async () => {
    const { db } = t.ctx;
    const job = await createImport(db, tenant.workspaceId, null, 'cancel.csv', Buffer.from('Name,Email\nAda,ada@cancel.test\nBob,bob@cancel.test\n'));
    await startImport(db, job, ['name', 'email'], DEFAULT_SWITCHES);
    const admin = await signInByLink(t, tenant.userId);
    expect((await admin.post(`/console/leads/import/${job.id}/cancel`)).status).toBe(303);
    expect(await runDueImport(importWriteGroups(db, t.ctx.logger), db, tenant.workspaceId, 'worker-c', 60_000, () => false)).toBe(0);
    const page = await admin.get(`/console/leads/import/${job.id}`);
    expect(page.text).toContain('cancelled');
    const results = parse((await admin.get(`/console/leads/import/${job.id}/results.csv`)).text, { bom: true }) as string[][];
    expect(results).toEqual([
      ['Name', 'Email', 'status', 'lead_id', 'error'],
      ['Ada', 'ada@cancel.test', 'not run', '', ''],
      ['Bob', 'bob@cancel.test', 'not run', '', ''],
    ]);
  });
});
