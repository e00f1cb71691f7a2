import type { webhooks } from '../../generated/api.js';

// The events the service pushes to receivers, looked up from the OpenAPI document's `webhooks`
// section (generated/api.ts): each is the JSON request body the document gives that delivery.
// Besides the envelope (`event`, `lead_id`, `sent_at`, and `workflow_id` on Custom URL blocks)
// they carry fields whose keys the workspace configured: a connector's constant and mapped
// fields (or the default set `id, name, email, phone, job_title, company, stage, tags`) and a
// workflow block's fields.

type JsonBodyOf<Name extends keyof webhooks> = webhooks[Name]['post']['requestBody']['content']['application/json'];

/** A connector push: auto-push of an analyzed lead, Push to CRM, or a Send to CRM block. */
export type LeadPushEvent = JsonBodyOf<'lead'>;

/**
 * A Send Webhook workflow block: a Custom URL block (with `workflow_id`; without `lead_id` when
 * the run had no lead), or a Saved-connector block (the connector's fields). A Saved-connector
 * block's own fields may replace any envelope key; `verifyWebhook` returns only deliveries whose
 * `event` is still one of the service's event names, so here it is `workflow`.
 */
export type WorkflowEvent = JsonBodyOf<'workflowCustomUrl'> | (JsonBodyOf<'workflowSavedConnector'> & { event: 'workflow' });

/** The connect dialog's Send test: a sample lead, not a real one (`lead_id` is null). */
export type TestEvent = JsonBodyOf<'test'>;

/** A verified JSON delivery; switch on `event`. */
export type WebhookEvent = LeadPushEvent | WorkflowEvent | TestEvent;

export const WEBHOOK_EVENT_NAMES: readonly WebhookEvent['event'][] = ['lead', 'workflow', 'test'];
