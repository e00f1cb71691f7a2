import type { CustomUrlWorkflowPayload, LeadErasedPayload, LeadPushPayload, SavedConnectorWorkflowPayload, SendTestPayload } from '../../generated/api.js';

// The events the service pushes to receivers are the JSON bodies the OpenAPI document's
// `webhooks` section gives each delivery (generated/api.ts):
//   LeadPushPayload                 a connector push: auto-push of an analyzed lead, Push to CRM, or a Send to CRM block
//   SendTestPayload                 the connect dialog's Send test: a sample lead, not a real one (`lead_id` is null)
//   CustomUrlWorkflowPayload        a Send Webhook block with a Custom URL (with `workflow_id`; without `lead_id` when the run had no lead)
//   SavedConnectorWorkflowPayload   a Send Webhook block with a saved connector (the connector's fields)
//   LeadErasedPayload               the workspace erased a lead this receiver got: delete what you hold about that person (ids only)
// Besides the envelope (`event`, `lead_id`, `sent_at`, and `workflow_id` on Custom URL blocks)
// they carry fields whose keys the workspace configured: a connector's constant and mapped
// fields (or the default set `id, name, email, phone, job_title, company, stage, tags`) and a
// workflow block's fields.

/**
 * A Send Webhook workflow block. A Saved-connector block's own fields may replace any envelope
 * key; `verifyWebhook` returns only deliveries whose `event` is still one of the service's
 * event names, so here it is `workflow`.
 */
export type WorkflowEvent = CustomUrlWorkflowPayload | (SavedConnectorWorkflowPayload & { event: 'workflow' });

/** A verified JSON delivery; switch on `event`. */
export type WebhookEvent = LeadPushPayload | WorkflowEvent | SendTestPayload | LeadErasedPayload;

/** @deprecated The name 1.0 gave `LeadPushPayload`; kept so code written against 1.0 still compiles. */
export type LeadPushEvent = LeadPushPayload;

/** @deprecated The name 1.0 gave `SendTestPayload`; kept so code written against 1.0 still compiles. */
export type TestEvent = SendTestPayload;

export const WEBHOOK_EVENT_NAMES: readonly WebhookEvent['event'][] = ['lead', 'workflow', 'test', 'lead_erased'];
