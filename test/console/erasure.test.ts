import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { postLead, uniqueName } from '../support/requests.js';
import { addUser, signInByLink, startConsoleBed, type ConsoleBed, type ConsoleSession } from './support.js';

// A lead's page, for admins: Download data (the person's export) and Erase person, whose
// confirmation page has the box "Do not store this person again" and the button Erase.

let bed: ConsoleBed;
let member: ConsoleSession;
beforeAll(async () => {
  bed = await startConsoleBed();
  member = await signInByLink(bed.app, (await addUser(bed.app.ctx.db, bed.tenant.workspaceId, 'member')).id);
});
afterAll(async () => {
  await bed.app.close();
});

async function newLead(tenant = bed.tenant) {
  const email = `${uniqueName('grace-')}@navy-erasure.test`;
  const created = await postLead(bed.app, tenant, { name: 'Grace Erasable', email, enrich: false });
  expect(created.status).toBe(201);
  return { id: created.body.data.id as number, email };
}

describe("a lead's personal data in the console", () => {
  it('offers Download data and Erase person to admins; erasing with the box ticked refuses the person afterwards', async () => {
    const lead = await newLead();
    const page = await bed.admin.get(`/console/leads/${lead.id}`);
    expect(page.text).toContain('>Download data</a>');
    expect(page.text).toContain('>Erase person</button>');

    const download = await bed.admin.get(`/console/leads/${lead.id}/export`);
    expect(download.status).toBe(200);
    expect(download.headers['content-disposition']).toBe(`attachment; filename=lead-${lead.id}-data.json`);
    expect(JSON.parse(download.text).leads[0]).toMatchObject({ lead: { id: lead.id, emails: [lead.email] }, identities: [{ kind: 'email', value: lead.email }] });

    const confirm = await bed.admin.get(`/console/leads/${lead.id}/erase`);
    expect(confirm.text).toMatch(/<input type="checkbox" id="suppress" name="suppress"[^>]*>\s*<label for="suppress">Do not store this person again<\/label>/);
    expect(confirm.text).toContain('>Erase</button>');
    const erased = await bed.admin.post(`/console/leads/${lead.id}/erase`, { suppress: 'on' });
    expect(erased.status).toBe(200);
    expect(erased.text).toContain('this person will not be stored again');
    expect(erased.text).toMatch(/<code>erasure_[0-9a-f]{32}<\/code>/);

    expect((await bed.admin.get(`/console/leads/${lead.id}`)).status).toBe(404);
    const again = await postLead(bed.app, bed.tenant, { name: 'Grace Erasable', email: lead.email, enrich: false });
    expect(again.status).toBe(422);
    expect(Object.keys(again.body.errors)).toEqual(['email']);
  });

  it("refuses members (403) and another workspace's lead (404); erasing without the box lets the person back", async () => {
    const lead = await newLead();
    expect((await member.get(`/console/leads/${lead.id}`)).text).not.toContain('Erase person');
    for (const path of ['erase', 'export']) expect((await member.get(`/console/leads/${lead.id}/${path}`)).status).toBe(403);
    expect((await member.post(`/console/leads/${lead.id}/erase`)).status).toBe(403);
    const foreign = await newLead(bed.other);
    for (const path of ['erase', 'export']) expect((await bed.admin.get(`/console/leads/${foreign.id}/${path}`)).status).toBe(404);
    expect((await bed.admin.post(`/console/leads/${foreign.id}/erase`)).status).toBe(404);

    expect((await bed.admin.post(`/console/leads/${lead.id}/erase`)).status).toBe(200);
    expect((await postLead(bed.app, bed.tenant, { name: 'Grace Erasable', email: lead.email, enrich: false })).status).toBe(201);
  });
});
