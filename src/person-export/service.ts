import type { Lead } from '../../generated/api.js';
import type { Db } from '../db/connect.js';
import { answersHolding } from '../erasure/repository.js';
import { findPerson, personKey, recordPersonalDataAudit, type Actor, type PersonSelector } from '../erasure/service.js';
import { presentLead } from '../leads/present.js';
import { findCrmRecordId } from '../leads/list-repository.js';
import { findLeadRecords } from '../leads/read-repository.js';
import { companiesOf, deliveriesOf, identitiesOf, tagLinksOf } from './repository.js';

// A person's data on request (GDPR Art. 15) for the CLI's `lead export` and the console's
// Download data: one JSON document of everything the workspace stores about them, read in one
// transaction (a consistent snapshot) so the audit entry is written beside it.

export interface PersonExport {
  exported_at: string;
  workspace_id: number;
  leads: Array<{
    lead: Lead;
    /** The receiver's record id a connector push stored on the lead. */
    crm_record_id: string | null;
    identities: Array<{ kind: string; value: string }>;
    tags: Array<{ tag_id: number; name: string; linked_at: string }>;
    company: Record<string, unknown> | null;
    deliveries: Array<Record<string, unknown>>;
  }>;
  /** Stored Idempotency-Key answers that hold the person (kept 24 hours). */
  stored_answers: Array<{ key: string; status_code: number | null; response_body: unknown; created_at: string }>;
}

export async function exportPerson(db: Db, request: { workspaceId: number; person: PersonSelector; actor: Actor }): Promise<PersonExport> {
  const { workspaceId } = request;
  const key = personKey(request.person);
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const leadIds = await findPerson(trx, workspaceId, key);
      const records = await findLeadRecords(trx, workspaceId, leadIds);
      const leads = records.map(presentLead);
      const identities = await identitiesOf(trx, workspaceId, leadIds);
      const tags = await tagLinksOf(trx, workspaceId, leadIds);
      const companies = await companiesOf(trx, workspaceId, [...new Set(leads.flatMap((lead) => (lead.company?.id ? [lead.company.id] : [])))]);
      const deliveries = await deliveriesOf(trx, workspaceId, leadIds);
      const details = [
        ...new Set([...leads.flatMap((lead) => [...lead.emails, ...lead.phones, ...lead.links.map((link) => link.url)]), ...identities.map((identity) => identity.value)]),
      ];
      const storedAnswers = leadIds.length ? await answersHolding(trx, workspaceId, leadIds, details) : [];
      const document: PersonExport = {
        exported_at: new Date().toISOString(),
        workspace_id: workspaceId,
        leads: await Promise.all(
          leads.map(async (lead) => ({
            lead,
            crm_record_id: await findCrmRecordId(trx, workspaceId, lead.id!),
            identities: identities.filter((row) => row.lead_id === lead.id).map(({ kind, value }) => ({ kind, value })),
            tags: tags.filter((row) => row.lead_id === lead.id).map(({ tag_id, name, linked_at }) => ({ tag_id, name, linked_at })),
            company: companies.find((company) => company.id === lead.company?.id) ?? null,
            deliveries: deliveries.filter((row) => row.lead_id === lead.id),
          })),
        ),
        stored_answers: storedAnswers,
      };
      await recordPersonalDataAudit(trx, { action: 'lead.exported', actor: request.actor, workspaceId, leadIds, details: { deliveries: deliveries.length } });
      return document;
    });
}
