import { beforeAll, describe, expect, it } from '@jest/globals';
import { createWorkflow } from '../../src/workflows/service.js';
import type { TestApp } from '../support/app.js';
import { createTenant } from '../support/fixtures.js';
import { cli, drainUntilBranch, outboundTestBed, postNewPerson } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';
import { OPERATOR } from '../../src/audit/service.js';

// A Custom URL workflow's credential headers were entered for one receiver: an edit that moves
// its URL to another origin (scheme, host or port) must not send them to the new one.

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

const SECRET = 'key_0123456789abcdef';

describe('a workflow whose URL is edited', () => {
  it.each([
    ['to another origin sends no stored credential header, and keeps the others', 'http://127.0.0.1:9/old', undefined],
    ['within its origin keeps the stored credential headers', 'RECEIVER/old', SECRET],
  ])('%s', async (_name, from, expectedKey) => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await createWorkflow(t.ctx.db, OPERATOR, {
      workspaceId: tenant.workspaceId,
      trigger: 'lead_created',
      block: {
        endpoint: 'url',
        url: from.replace('RECEIVER', receiver.url),
        method: 'POST',
        format: 'json',
        headers: [
          { key: 'X-Api-Key', value: SECRET },
          { key: 'X-Team', value: 'sales' },
        ],
        fields: [],
      },
    });
    const edited = await cli<{ warnings: string[] }>(t, ['workflow', 'edit', '--id', String(workflow.id), '--trigger', 'lead_created', '--url', `${receiver.url}/moved`]);
    expect(edited.warnings.some((warning) => warning.startsWith('The URL moved to another origin'))).toBe(expectedKey === undefined);

    await postNewPerson(t, tenant);
    await drainUntilBranch(t, tenant.workspaceId, 'Delivered');
    const sent = receiver.requests.find((request) => request.path === '/moved')!;
    expect(sent.headers['x-api-key']).toBe(expectedKey);
    expect(sent.headers['x-team']).toBe('sales');
  });
});
