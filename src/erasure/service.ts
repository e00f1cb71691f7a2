import { keyPrefixesOfWorkspace, notifyKeysChanged } from '../api-keys/repository.js';
import { markSuppressionList } from '../workspaces/repository.js';
import { recordAudit, type Actor, type AuditEntry } from '../audit/service.js';
import { randomUUID } from 'node:crypto';
import type { Db, Executor } from '../db/connect.js';
import { deleteLeads } from '../leads/write-repository.js';
import { businessDomainOfEmail, linkedinHandle, normalizeEmail, normalizePhone, phoneMatchKey } from '../normalize.js';
import { deleteCompanyAnalyses, deleteLeadEvents } from '../outbox/erased-events-repository.js';
import { enqueue } from '../outbox/repository.js';
import { Refused } from '../refused.js';
import { suppressContacts, type ContactKey } from '../suppression/repository.js';
import {
  deleteAnswersHolding,
  deletePersonsCompanies,
  findPersonLeads,
  lockErasedLeads,
  receivingEndpoints,
  removeContactsFromCompanies,
  tombstoneDeliveries,
  type ErasedLead,
  type PersonKey,
} from './repository.js';

// Erasing a person (GDPR Art. 17) for the CLI's `lead erase` and the console's Erase person:
// one transaction removes the lead and every copy of its data in the workspace, keeps what
// the delivery log needs as tombstones, tells every receiver through the outbox (`lead.erased`,
// fanned out by src/worker/erasure-notices.ts), and with suppression keeps the keyed digests
// of the contact details so the person is refused later (src/suppression/).

/** How an operator names a person: a lead id, or one of their contact details as sent. */
export type PersonSelector = { id: number } | { email: string } | { phone: string } | { linkedinUrl: string };

/** Who asks: an operator with the CLI, or a console user (from an address). */
export type { Actor };

/** The selector as the match key lead_identities holds (normalized as the intake normalizes). */
export function personKey(selector: PersonSelector): PersonKey {
  if ('id' in selector) return { kind: 'id', id: selector.id };
  if ('email' in selector) return { kind: 'email', value: normalizeEmail(selector.email) };
  if ('phone' in selector) {
    const digits = normalizePhone(selector.phone);
    if (!digits) throw new Refused('invalid_argument', `--phone must have at least 7 digits, got "${selector.phone}".`);
    return { kind: 'phone', value: phoneMatchKey(digits) };
  }
  const handle = linkedinHandle(selector.linkedinUrl);
  if (!handle) throw new Refused('invalid_argument', `--linkedin-url must be a LinkedIn profile URL (https://www.linkedin.com/in/<handle>), got "${selector.linkedinUrl}".`);
  return { kind: 'linkedin', value: handle };
}

/** The person's leads in the workspace; an unknown lead id is refused (an unknown contact detail finds none). */
export async function findPerson(db: Executor, workspaceId: number, key: PersonKey): Promise<number[]> {
  const leadIds = await findPersonLeads(db, workspaceId, key);
  if (key.kind === 'id' && leadIds.length === 0) throw new Refused('not_found', `Lead ${key.id} does not exist in workspace ${workspaceId}.`);
  return leadIds;
}

/**
 * The audit entries of an erasure or an export, one per lead, in the transaction of the change:
 * ids and counts only, never a personal detail (a contact that matched no lead is not named).
 */
export async function recordPersonalDataAudit(
  trx: Executor,
  entry: { action: 'lead.erased' | 'lead.exported'; actor: Actor; workspaceId: number; leadIds: readonly number[]; details: AuditEntry['details'] },
): Promise<void> {
  const { action, actor, workspaceId, details } = entry;
  const ids: ReadonlyArray<number | null> = entry.leadIds.length > 0 ? entry.leadIds : [null];
  for (const id of ids) await recordAudit(trx, { actor, workspaceId, action, target: { type: 'lead', id }, details });
}

export interface Endpoint {
  kind: 'connector' | 'workflow';
  id: number;
}

export interface ErasureResult {
  erased: number[];
  notified: Endpoint[];
  receipt: {
    id: string;
    workspace_id: number;
    erased_at: string;
    suppressed: boolean;
    deliveries_tombstoned: number;
    stored_answers_removed: number;
    events_removed: number;
    companies_removed: number[];
  };
}

const unique = <Value>(values: Iterable<Value>): Value[] => [...new Set(values)];

/** Every contact detail the leads hold, as stored and as matched: what a stored answer may repeat. */
const contactDetails = (leads: readonly ErasedLead[]) =>
  unique(leads.flatMap((lead) => [...lead.emails, ...lead.phones, ...lead.links.map((link) => link.url), ...lead.identities.map((identity) => identity.value)]));

/** Erases the person the selector names (see the file's comment); `suppress` refuses them from then on. */
export async function erasePerson(db: Db, request: { workspaceId: number; person: PersonSelector; suppress: boolean; actor: Actor }): Promise<ErasureResult> {
  const { workspaceId } = request;
  const key = personKey(request.person);
  return db.transaction().execute(async (trx) => {
    const leads = await lockErasedLeads(trx, workspaceId, await findPerson(trx, workspaceId, key));
    const leadIds = leads.map((lead) => lead.id);
    // Events first: a fan-out holding one commits its deliveries before the tombstones are made.
    const eventsRemoved = leadIds.length ? await deleteLeadEvents(trx, workspaceId, leadIds) : 0;
    const received = leadIds.length ? await receivingEndpoints(trx, workspaceId, leadIds) : [];
    const tombstoned = leadIds.length ? await tombstoneDeliveries(trx, workspaceId, leadIds) : 0;
    const answersRemoved = leadIds.length ? await deleteAnswersHolding(trx, workspaceId, leadIds, contactDetails(leads)) : 0;
    await deleteLeads(trx, workspaceId, leadIds);

    const emails = unique(leads.flatMap((lead) => lead.emails));
    const companyIds = unique(leads.flatMap((lead) => (lead.company_id === null ? [] : [lead.company_id])));
    const emailDomains = unique(emails.flatMap((email) => businessDomainOfEmail(email) ?? []));
    const companiesRemoved = await deletePersonsCompanies(trx, workspaceId, companyIds, emailDomains);
    await deleteCompanyAnalyses(trx, workspaceId, companiesRemoved);
    await removeContactsFromCompanies(
      trx,
      workspaceId,
      companyIds.filter((id) => !companiesRemoved.includes(id)),
      emails,
      unique(leads.flatMap((lead) => lead.phones)),
    );

    if (request.suppress) {
      const keys: ContactKey[] = [...leads.flatMap((lead) => lead.identities), ...(key.kind === 'id' ? [] : [{ kind: key.kind, value: key.value }])];
      await suppressContacts(trx, workspaceId, keys);
      // Authentication caches the flag with each key: the API processes learn it as they learn of a key's change.
      if (await markSuppressionList(trx, workspaceId)) await notifyKeysChanged(trx, await keyPrefixesOfWorkspace(trx, workspaceId));
    }

    const endpointsOf = (leadId: number) => received.filter((row) => row.lead_id === leadId);
    await enqueue(
      trx,
      workspaceId,
      leads
        .filter((lead) => endpointsOf(lead.id).length > 0)
        .map((lead) => ({
          topic: 'lead.erased' as const,
          payload: {
            lead_id: lead.id,
            crm_record_id: lead.crm_record_id,
            connector_ids: endpointsOf(lead.id).flatMap((row) => (row.connector_id === null ? [] : [row.connector_id])),
            workflow_ids: endpointsOf(lead.id).flatMap((row) => (row.workflow_id === null ? [] : [row.workflow_id])),
          },
        })),
    );
    const notified = unique(received.map((row) => (row.connector_id !== null ? `connector:${row.connector_id}` : `workflow:${row.workflow_id}`))).map((text) => {
      const [kind, id] = text.split(':');
      return { kind: kind as Endpoint['kind'], id: Number(id) };
    });
    const result: ErasureResult = {
      erased: leadIds,
      notified,
      receipt: {
        id: `erasure_${randomUUID().replaceAll('-', '')}`,
        workspace_id: workspaceId,
        erased_at: new Date().toISOString(),
        suppressed: request.suppress,
        deliveries_tombstoned: tombstoned,
        stored_answers_removed: answersRemoved,
        events_removed: eventsRemoved,
        companies_removed: companiesRemoved,
      },
    };
    await recordPersonalDataAudit(trx, {
      action: 'lead.erased',
      actor: request.actor,
      workspaceId,
      leadIds,
      details: {
        receipt: result.receipt.id,
        suppressed: request.suppress,
        deliveries_tombstoned: tombstoned,
        stored_answers_removed: answersRemoved,
        companies_removed: companiesRemoved.length,
        notified: notified.length,
      },
    });
    return result;
  });
}
