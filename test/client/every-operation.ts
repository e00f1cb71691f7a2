// A client's view of the generated types: every operation called through openapi-fetch,
// typed by `paths` alone. `npm run typecheck` compiles it (so a change of the generated
// types that breaks the obvious client code fails there), and
// test/client/typed-client.test.ts runs it against the service.
import createClient from 'openapi-fetch';
import { onDuplicateValues, type LeadCreateRequest, type OnDuplicate, type paths } from '../../generated/api.js';

export interface Outcome {
  me: string;
  tagNames: string[];
  createdStatus: number;
  createdId: number | null;
  readName: string;
  batchCreated: number;
  onDuplicateChoices: readonly OnDuplicate[];
}

export async function callEveryOperation(baseUrl: string, token: string): Promise<Outcome> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });

  const me = await client.GET('/api/v1/me');
  if (!me.data) throw new Error(`GET /me failed: ${JSON.stringify(me.error)}`);

  const tags = await client.GET('/api/v1/tags', { params: { query: { include_archived: true } } });
  if (!tags.data) throw new Error(`GET /tags failed: ${JSON.stringify(tags.error)}`);

  // The obvious payload: the switches have defaults, so they can be left out.
  const created = await client.POST('/api/v1/leads', { body: { name: 'Typed Client', email: 'typed.client@gmail.com' } });
  if (!created.data) throw new Error(`POST /leads failed: ${JSON.stringify(created.error)}`);

  // Named schema types and enum values are exported for clients.
  const update: LeadCreateRequest = { name: 'Typed Client', email: 'typed.client@gmail.com', on_duplicate: onDuplicateValues[0] };
  const updated = await client.POST('/api/v1/leads', { body: update, params: { header: { 'Idempotency-Key': `typed-${Date.now()}` } } });
  if (updated.error) throw new Error(`POST /leads (update) failed: ${JSON.stringify(updated.error)}`);

  const id = created.data.data.id;
  if (id === null) throw new Error('a created lead has an id');
  const read = await client.GET('/api/v1/leads/{id}', { params: { path: { id } } });
  if (!read.data) throw new Error(`GET /leads/{id} failed: ${JSON.stringify(read.error)}`);

  const batch = await client.POST('/api/v1/leads/batch', { body: { leads: [{ name: 'Batch Row', phone: '+1 415 555 0199' }], dry_run: true } });
  if (!batch.data) throw new Error(`POST /leads/batch failed: ${JSON.stringify(batch.error)}`);

  return {
    me: me.data.data.workspace.name,
    tagNames: tags.data.data.map((tag) => tag.name),
    createdStatus: created.response.status,
    createdId: id,
    readName: read.data.data.name,
    batchCreated: batch.data.meta.created,
    onDuplicateChoices: onDuplicateValues,
  };
}
