import { beforeAll, describe, expect, it } from '@jest/globals';
import { insertTag } from '../../src/tags/repository.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import type { Tenant } from '../support/fixtures.js';
import { callEveryOperation } from './every-operation.js';

const bed = testBed({ tenants: [{ name: 'Typed client workspace' }] });
let t: TestApp;
let tenant: Tenant;
beforeAll(async () => {
  ({
    t,
    tenants: [tenant],
  } = bed);
  await insertTag(t.ctx.db, { workspace_id: tenant.workspaceId, name: 'Archived', color: null, active: false });
});

describe('a client typed by the generated paths (openapi-fetch)', () => {
  it('calls every operation, a POST /leads with only name and email included', async () => {
    const outcome = await callEveryOperation(await t.listen(), tenant.token);
    expect(outcome).toEqual({
      me: 'Typed client workspace',
      tagNames: ['Archived'],
      createdStatus: 201,
      createdId: expect.any(Number),
      readName: 'Typed Client',
      batchCreated: 1,
      onDuplicateChoices: ['update', 'skip', 'error'],
    });
  });
});
