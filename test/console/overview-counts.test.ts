import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { sessionLimitsOf } from '../../src/console-auth/service.js';
import { housekeeping } from '../../src/worker/housekeeping.js';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { postBatch, postLead, uniqueEmail } from '../support/requests.js';
import { startConsoleBed, type ConsoleSession } from './support.js';

// The Overview's leads per day: what the API's writes did (created, updated, skipped,
// failed), counted by the writes' own transactions and read back from the page.

let app: TestApp;
let tenant: Tenant;
let other: Tenant;
let admin: ConsoleSession;

beforeAll(async () => {
  ({ app, tenant, other, admin } = await startConsoleBed());
});
afterAll(async () => {
  await app.close();
});

const today = async () => (await sql<{ day: string }>`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day`.execute(app.ctx.db)).rows[0]!.day;

/** The Overview's leads table: the named columns of the given day's row. */
async function leadsOn(day: string): Promise<Record<string, number>> {
  const page = await admin.get('/console/');
  expect(page.status).toBe(200);
  const leadsChart = page.text.slice(page.text.indexOf('<h2>Leads per day'), page.text.indexOf('<h2>Deliveries per day'));
  const names = [...leadsChart.matchAll(/<th scope="col" class="num">([^<]+)<\/th>/g)].map((match) => match[1]!);
  const row = new RegExp(`<tr><td>${day}</td>(.*?)</tr>`).exec(leadsChart)?.[1] ?? '';
  const values = [...row.matchAll(/<td class="num">(\d+)<\/td>/g)].map((match) => Number(match[1]));
  return Object.fromEntries(names.map((name, index) => [name, values[index] ?? Number.NaN]));
}

describe("the Overview's leads per day", () => {
  it("counts today's created, updated, skipped and failed rows as the API answered them; dry runs, replays and other workspaces not at all", async () => {
    const day = await today();
    expect(await leadsOn(day)).toEqual({ created: 0, updated: 0, skipped: 0, failed: 0 });
    const known = uniqueEmail('known');
    const second = uniqueEmail('second');
    const answers = [
      await postLead(app, tenant, { name: 'Known', email: known }), // created
      await postLead(app, tenant, { name: 'Second', email: second }), // created
      await postLead(app, tenant, { name: 'Known again', email: known }), // updated
      await postLead(app, tenant, { name: 'Known', email: known, on_duplicate: 'skip' }), // skipped
      await postLead(app, tenant, { name: 'Known', email: known, on_duplicate: 'error' }), // failed: 409 duplicate_lead
      await postLead(app, tenant, { name: 'Tagged', email: uniqueEmail(), tags: ['never-seen'], create_missing_tags: false }), // failed: 422
      await postLead(app, tenant, { name: 'Preview', email: uniqueEmail(), dry_run: true }), // not counted
      await postLead(app, tenant, { name: 'Keyed', email: 'keyed@gmail.com' }, { 'Idempotency-Key': 'overview-counts-1' }), // created
      await postLead(app, tenant, { name: 'Keyed', email: 'keyed@gmail.com' }, { 'Idempotency-Key': 'overview-counts-1' }), // a replay: not counted
      await postLead(app, tenant, { name: 'No contact' }), // refused before the engine (422): not counted
      await postLead(app, other, { name: 'Elsewhere', email: uniqueEmail() }), // another workspace
    ];
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 200, 200, 409, 422, 200, 201, 201, 422, 201]);
    expect(answers[8]!.headers['idempotency-replayed']).toBe('true');

    const batch = await postBatch(app, tenant, {
      create_missing_tags: false,
      leads: [
        { name: 'New in batch', email: uniqueEmail() },
        { name: 'Second again', email: second },
        { name: 'Bad tag', email: uniqueEmail(), tags: ['never-seen'] },
      ],
    });
    expect(batch.body.meta).toMatchObject({ created: 1, updated: 1, skipped: 0, failed: 1 });
    const dryBatch = await postBatch(app, tenant, { dry_run: true, leads: [{ name: 'Preview', email: uniqueEmail() }] });
    expect(dryBatch.body.meta).toMatchObject({ created: 1, dry_run: true });

    expect(await leadsOn(day)).toEqual({ created: 4, updated: 2, skipped: 1, failed: 3 });
  });

  it('is kept 90 days: housekeeping deletes older days', async () => {
    await sql`
      INSERT INTO lead_daily_counts (workspace_id, day, created)
      VALUES (${tenant.workspaceId}, (now() AT TIME ZONE 'UTC')::date - 90, 1), (${tenant.workspaceId}, (now() AT TIME ZONE 'UTC')::date - 91, 1)`.execute(app.ctx.db);
    await housekeeping(app.ctx.db, app.ctx.config.DELIVERY_RETENTION_DAYS, sessionLimitsOf(app.ctx.config), app.ctx.config.AUDIT_RETENTION_DAYS);
    const { rows } = await sql<{ age: number }>`
      SELECT DISTINCT (now() AT TIME ZONE 'UTC')::date - day AS age FROM lead_daily_counts WHERE workspace_id = ${tenant.workspaceId} ORDER BY age DESC`.execute(app.ctx.db);
    expect(rows.map((row) => row.age)).toEqual([90, 0]);
  });

  it("adds up a day's slots: each database session counts in a row of its own", async () => {
    const { day } = (await sql<{ day: string }>`SELECT to_char((now() AT TIME ZONE 'UTC')::date - 2, 'YYYY-MM-DD') AS day`.execute(app.ctx.db)).rows[0]!;
    await sql`
      INSERT INTO lead_daily_counts (workspace_id, day, slot, created, updated, skipped, failed)
      VALUES (${tenant.workspaceId}, ${day}::date, 3, 2, 1, 0, 4), (${tenant.workspaceId}, ${day}::date, 11, 5, 0, 1, 0)`.execute(app.ctx.db);
    expect(await leadsOn(day)).toEqual({ created: 7, updated: 1, skipped: 1, failed: 4 });
  });
});
