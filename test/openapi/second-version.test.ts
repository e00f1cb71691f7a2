import { afterAll, describe, expect, it } from '@jest/globals';
import { isMap, isScalar } from 'yaml';
import { CONTRACT_DOCUMENTS } from '../../src/http/app.js';
import { contractCopy } from '../support/contract-copy.js';
import { testBed } from '../support/test-bed.js';

// How a breaking change ships (README, "Changing the contract"): a second path version from a
// document of its own, beside the first, served by the same handlers where they agree. Here a
// copy of the document is v2 (every path under /api/v2) with one field renamed, GET /me's
// `workspace.name` as `workspace.display_name`; one process answers both, and each answer is checked against its
// own version's document (the test app validates responses).

const v2 = contractCopy((document) => {
  const paths = document.get('paths');
  if (!isMap(paths)) throw new Error('no paths');
  for (const pair of paths.items) if (isScalar(pair.key)) pair.key.value = String(pair.key.value).replace('/api/v1/', '/api/v2/');
  document.setIn(['info', 'version'], '2.0.0');
  const workspace = ['components', 'schemas', 'Me', 'properties', 'workspace'];
  document.setIn([...workspace, 'properties', 'display_name'], document.getIn([...workspace, 'properties', 'name']));
  document.deleteIn([...workspace, 'properties', 'name']);
  document.setIn([...workspace, 'required'], ['id', 'display_name']);
});
type Me = { data: { workspace: { id: number; name?: string } } };
/** Where v2 differs from what the handlers answer (v1's shapes): the workspace's name. */
const renameWorkspaceName = (operationId: string, body: unknown) => {
  if (operationId !== 'getMe') return body;
  const { data } = body as Me;
  const { name, ...workspace } = data.workspace;
  return { data: { ...data, workspace: { ...workspace, display_name: name } } };
};

const bed = testBed({ app: { versions: [{ documents: CONTRACT_DOCUMENTS }, { documents: v2, adapt: { response: renameWorkspaceName } }] } });
afterAll(() => v2.remove());

describe('a second path version beside the first, in one process', () => {
  it('answers /api/v1 in v1 shapes and /api/v2 in v2 shapes, from the same handlers and the same data', async () => {
    const [tenant] = bed.tenants;
    const created = await bed.t.http
      .post('/api/v2/leads')
      .set(tenant.auth)
      .send({ name: 'Ada Lovelace', email: 'ada@example.com', tags: ['Engines'] });
    expect(created.status).toBe(201);
    const [v1Me, v2Me] = await Promise.all([bed.t.http.get('/api/v1/me').set(tenant.auth), bed.t.http.get('/api/v2/me').set(tenant.auth)]);
    expect(v1Me.status).toBe(200);
    expect(v1Me.body.data.workspace).toEqual({ id: tenant.workspaceId, name: 'Acme Sales' });
    expect(v2Me.status).toBe(200);
    expect(v2Me.body.data.workspace).toEqual({ id: tenant.workspaceId, display_name: 'Acme Sales' });
    expect(v2Me.body.data.api_key).toEqual(v1Me.body.data.api_key);
    const [v1Lead, v2Lead] = await Promise.all([
      bed.t.http.get(`/api/v1/leads/${created.body.data.id}`).set(tenant.auth),
      bed.t.http.get(`/api/v2/leads/${created.body.data.id}`).set(tenant.auth),
    ]);
    expect(v2Lead.status).toBe(200);
    expect(v2Lead.body).toEqual(v1Lead.body);
  });

  it('validates each version against its own document', async () => {
    const [tenant] = bed.tenants;
    const unknownInV2 = await bed.t.http.get('/api/v2/tags?include_archived=maybe').set(tenant.auth);
    expect(unknownInV2.status).toBe(422);
    const unknownPath = await bed.t.http.get('/api/v3/tags').set(tenant.auth);
    expect(unknownPath.status).toBe(404);
  });
});
