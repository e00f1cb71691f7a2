// Compiled by test/client/package.test.ts, strict, in a project that installed the packed
// client: fails `tsc` when the client's public types regress (a wrong field accepted, a
// lead without a contact detail accepted, a result no longer narrowing).
import { createLeadIntakeClient, verifyWebhook, WebhookVerificationError, type CreateLeadsRow, type Lead, type LeadRow, type WebhookEvent } from 'lead-intake-client';

const client = createLeadIntakeClient({ baseUrl: 'http://localhost:3000', apiKey: 'lk0000000000_secret', maxAttempts: 3 });

export async function createOne(): Promise<number | null> {
  // The switches are optional: the server applies their defaults.
  const created = await client.createLead({ name: 'Jane Doe', email: 'jane@acme.test' }, { idempotencyKey: 'order-42' });
  const key: string = created.idempotencyKey;
  void key;
  if (created.ok) {
    const status: 200 | 201 = created.status;
    const lead: Lead = created.data.data;
    const replayed: boolean = created.replayed;
    (void status, void replayed);
    // What matched: a kind to branch on (null for a new lead), and the other leads it points at.
    const kind: 'email' | 'linkedin' | 'phone' | null = created.data.meta.match_kind;
    for (const conflict of created.data.meta.conflicts) (void (conflict.lead_id satisfies number), void (conflict.kind satisfies 'email' | 'linkedin' | 'phone'));
    // @ts-expect-error a match kind is one of email | linkedin | phone
    if (kind === 'name') return null;
    // @ts-expect-error a lead has no `nickname`
    void lead.nickname;
    return lead.id;
  }
  switch (created.error.error) {
    case 'validation_failed': {
      const messages: string[] | undefined = created.error.errors['email'];
      void messages;
      break;
    }
    case 'duplicate_lead': {
      const existing: number = created.error.lead_id;
      const matchedOn: string = created.error.matched_on;
      const kind: 'email' | 'linkedin' | 'phone' = created.error.match_kind;
      const others: number[] = created.error.conflicts.map((conflict) => conflict.lead_id);
      (void existing, void matchedOn, void kind, void others);
      break;
    }
    case 'insufficient_scope': {
      const required: 'leads:write' | 'leads:read' | 'tags:read' = created.error.required_scope;
      void required;
      break;
    }
    case 'network_error': {
      const cause: unknown = created.error.cause;
      void cause;
      break;
    }
    case 'rate_limited':
    case 'idempotency_key_reuse':
    case 'idempotency_key_in_progress':
    case 'invalid_api_key':
    case 'unexpected_response':
      break;
    // @ts-expect-error not an error code of POST /leads
    case 'not_found':
      break;
  }
  return null;
}

export async function wrongRequests(): Promise<void> {
  // @ts-expect-error `name` is required
  await client.createLead({ email: 'jane@acme.test' });
  // @ts-expect-error a lead needs a contact detail: email, phone, linkedin_url, emails or phones
  await client.createLead({ name: 'Jane' });
  // @ts-expect-error so does every row of a batch
  await client.createLeads([{ name: 'Jane', phones: ['+1 415 555 0100'] }, { name: 'Joe' }]);
  for (const contact of [
    { email: 'jane@acme.test' },
    { phone: '+1 415 555 0100' },
    { linkedin_url: 'https://www.linkedin.com/in/jane' },
    { emails: ['jane@acme.test'] },
    { phones: ['+1 415 555 0100'] },
  ]) {
    await client.createLead({ name: 'Jane', ...contact });
  }
  // @ts-expect-error `on_duplicate` is one of update | skip | error
  await client.createLead({ name: 'Jane', email: 'jane@acme.test', on_duplicate: 'merge' });
  // @ts-expect-error unknown lead field
  await client.createLead({ name: 'Jane', email: 'jane@acme.test', nickname: 'JD' });
  // @ts-expect-error a lead id is a number
  await client.getLead('42');
  // @ts-expect-error the batch takes `leads`
  await client.createBatch({ rows: [] });
  // @ts-expect-error switches belong to the call, not to a row
  const row: LeadRow = { name: 'Jane', email: 'jane@acme.test', dry_run: true };
  void row;
}

export async function readCalls(): Promise<void> {
  const me = await client.me();
  if (me.ok) {
    const batchMax: number = me.data.data.rate_limit.batch_max;
    void batchMax;
  }
  const tags = await client.listTags({ includeArchived: true });
  if (tags.ok) for (const tag of tags.data.data) void (tag.active satisfies boolean);
  const lead = await client.getLead(42);
  if (!lead.ok && lead.status === 404) {
    // A missing lead (`not_found`) and an unknown route (no code of its own) share the status.
    const code: 'not_found' | 'route_not_found' | 'unexpected_response' = lead.error.error;
    void code;
  }
}

export async function importRows(rows: LeadRow[]): Promise<void> {
  const imported = await client.createLeads(rows, { on_duplicate: 'skip', enrich: false });
  const first: CreateLeadsRow | undefined = imported.rows[0];
  if (first?.status === 'not_processed') void first.errors;
  if (first?.status === 'failed') void (first.error satisfies string);
  if (first?.status === 'created') void (first.warnings satisfies string[]);
  if (first?.status === 'updated') (void (first.match_kind satisfies 'email' | 'linkedin' | 'phone' | null), void first.conflicts[0]?.matched_on);
  // @ts-expect-error the switches are typed like the batch's
  await client.createLeads(rows, { on_duplicate: 'ignore' });
}

export async function receive(secret: string, headers: Record<string, string>, rawBody: string): Promise<number | null> {
  let event: WebhookEvent;
  try {
    event = await verifyWebhook(secret, headers, rawBody);
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason === 'stale_timestamp' ? -1 : null;
    throw error;
  }
  switch (event.event) {
    case 'lead':
      return event.lead_id;
    case 'test':
      return event.lead_id;
    case 'workflow':
      return typeof event.workflow_id === 'number' ? event.workflow_id : null;
    case 'lead_erased':
      return event.crm_record_id === null ? event.lead_id : null;
    // @ts-expect-error not an event the service sends
    case 'lead.created':
      return null;
  }
}
