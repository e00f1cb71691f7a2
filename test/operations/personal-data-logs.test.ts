import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '../../src/logger.js';
import { signInByLink } from '../console/support.js';
import type { TestApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import type { Tenant } from '../support/fixtures.js';
import { drain, LOCAL_DELIVERY_ENV, workflowTo } from '../support/outbound.js';
import { postLead } from '../support/requests.js';
import { testBed } from '../support/test-bed.js';

// Logs never carry a lead's name or contact details, at any level: a whole run (intake, an
// Idempotency-Key replay, a refused row, reads, deliveries to a receiver, the console's pages
// and the CLI) at LOG_LEVEL=trace, its every log line captured, holds none of them.

const captured: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, callback) {
    captured.push(chunk.toString());
    callback();
  },
});

const bed = testBed({ app: { env: LOCAL_DELIVERY_ENV, logger: createLogger('trace', sink) }, receiver: true });
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

const PERSON = {
  name: 'Zenobia Quartermaine',
  email: 'zenobia.quartermaine@quartermaine-works.test',
  phone: '+44 20 7946 0958',
  linkedin_url: 'https://www.linkedin.com/in/zenobia-quartermaine-77',
};
/** What must appear nowhere: the name, the email (and its local part), the phone's digits, the LinkedIn handle. */
const TRACES = [PERSON.name, 'Zenobia', 'Quartermaine', 'zenobia.quartermaine', '2079460958', 'zenobia-quartermaine-77'];

describe('the logs of a whole run at LOG_LEVEL=trace', () => {
  it("hold no lead's name, email, phone or LinkedIn URL", async () => {
    const cliLogs: string[] = [];
    const cliRun = async (args: string[]) => {
      const result = await runCli(args, { DATABASE_URL: t.databaseUrl, ...LOCAL_DELIVERY_ENV, LOG_LEVEL: 'trace' });
      expect(result.code).toBe(0);
      cliLogs.push(result.stderr);
      return result.json as Record<string, any>;
    };
    await workflowTo(t, tenant, `${bed.receiver.url}/created`);
    const connector = await cliRun(['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${bed.receiver.url}/crm`]);

    const created = await postLead(t, tenant, { ...PERSON, enrich: false }, { 'Idempotency-Key': 'log-run-1' });
    expect(created.status).toBe(201);
    expect((await postLead(t, tenant, { ...PERSON, enrich: false }, { 'Idempotency-Key': 'log-run-1' })).status).toBe(201);
    expect((await postLead(t, tenant, { name: PERSON.name, email: 'not an email', enrich: false })).status).toBe(422);
    const leadId = created.body.data.id as number;
    expect((await t.http.get(`/api/v1/leads/${leadId}`).set(tenant.auth)).status).toBe(200);
    await drain(t);
    expect(bed.receiver.requests.length).toBeGreaterThan(0);

    const admin = await signInByLink(t, tenant.userId);
    for (const path of [`/console/leads?search=${encodeURIComponent(PERSON.email)}`, `/console/leads/${leadId}`, '/console/deliveries']) {
      expect((await admin.get(path)).status).toBe(200);
    }
    expect((await admin.post(`/console/leads/${leadId}/push`, { connector: String(connector.id) })).status).toBeLessThan(400);
    await cliRun(['connector', 'push', '--id', String(connector.id), '--lead', String(leadId)]);
    await cliRun(['deliveries', 'list', '--workspace', String(tenant.workspaceId), '--lead', String(leadId)]);

    const logs = [...captured, ...cliLogs].join('');
    expect(captured.length).toBeGreaterThan(10);
    expect(TRACES.filter((trace) => logs.toLowerCase().includes(trace.toLowerCase()))).toEqual([]);
  });
});
