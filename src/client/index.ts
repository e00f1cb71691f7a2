// `lead-intake-client`: a typed client for the Lead Intake API and a verifier for the
// webhooks it sends. Types come from the OpenAPI document (generated/api.ts).
export { createLeadIntakeClient, type LeadIntakeClient, type LeadIntakeClientOptions } from './client.js';
export type { CreateLeadsOptions, CreateLeadsResult, CreateLeadsRow, UnprocessedRow } from './create-leads.js';
// Rows per `POST /leads/batch`, as the OpenAPI document states it (`GET /me` also reports it, as `rate_limit.batch_max`).
export { BATCH_MAX } from '../../generated/limits.js';
export type { FetchImplementation } from './transport.js';
export type {
  ApiError,
  ApiFailure,
  ApiResult,
  ApiSuccess,
  BatchMeta,
  BatchRowResult,
  CreateBatchBody,
  CreateBatchOperation,
  CreateLeadBody,
  CreateLeadOperation,
  GetLeadOperation,
  GetMeOperation,
  Lead,
  LeadRow,
  LeadWriteMeta,
  ListTagsOperation,
  Me,
  NetworkError,
  PostOptions,
  PostResult,
  ResponseInfo,
  Switches,
  Tag,
  UnexpectedResponseError,
} from './types.js';
export { verifyWebhook, verifyWebhookForm, WebhookVerificationError, WEBHOOK_TOLERANCE_SECONDS, type WebhookHeaders, type WebhookRefusal } from './webhooks.js';
export type { LeadPushEvent, TestEvent, WebhookEvent, WorkflowEvent } from './webhook-event.js';
export type { CustomUrlWorkflowPayload, LeadErasedPayload, LeadPushPayload, SavedConnectorWorkflowPayload, SendTestPayload } from '../../generated/api.js';
