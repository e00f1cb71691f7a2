import type { LeadCreateRequest, LeadInput, operations } from '../../generated/api.js';

// Compiled by `npm run typecheck` (part of `npm test`), never run: the contact rule holds in
// the generated types. A lead with no contact detail is a type error for POST /leads and for
// a batch row; if the types ever lose the rule, the unused @ts-expect-error fails the typecheck.
type CreateLeadBody = operations['createLead']['requestBody']['content']['application/json'];
type BatchBody = operations['createLeadsBatch']['requestBody']['content']['application/json'];

export const accepted: CreateLeadBody[] = [
  { name: 'Ada', email: 'ada@example.com' },
  { name: 'Ada', phone: '+44 20 7946 0958' },
  { name: 'Ada', linkedin_url: 'https://www.linkedin.com/in/ada' },
  { name: 'Ada', emails: ['ada@example.com'] },
  { name: 'Ada', phones: ['+44 20 7946 0958'], on_duplicate: 'skip' },
];
export const rows: LeadInput[] = accepted.map(({ on_duplicate: _switch, ...row }) => row);
export const batch: BatchBody = {
  leads: [
    { name: 'Ada', email: 'ada@example.com' },
    { name: 'Bob', phones: ['12345'] },
  ],
};
export const request: LeadCreateRequest = { name: 'Ada', linkedin_url: 'https://www.linkedin.com/in/ada', dry_run: true };

// @ts-expect-error -- no contact detail
export const noContact: CreateLeadBody = { name: 'Ada' };
// @ts-expect-error -- no contact detail in a batch row
export const noContactRow: BatchBody = { leads: [{ name: 'Ada', email: 'ada@example.com' }, { name: 'Bob' }] };
// @ts-expect-error -- a contact detail alone is not a lead: name is required
export const noName: LeadInput = { email: 'ada@example.com' };
// @ts-expect-error -- unknown fields stay errors
export const unknownField: CreateLeadBody = { name: 'Ada', email: 'ada@example.com', favourite_colour: 'red' };
