import createClient from 'openapi-fetch';
import type { paths } from '../../generated/api.js';
import { createLeadsInBatches, type CreateLeadsOptions, type CreateLeadsResult } from './create-leads.js';
import { resultFromOutcome, resultFromThrown } from './results.js';
import { createRetryingFetch, type FetchImplementation, type RetryPolicy } from './transport.js';
import type {
  ApiResult,
  CreateBatchBody,
  CreateBatchOperation,
  CreateLeadBody,
  CreateLeadOperation,
  GeneratedRequestBody,
  GetLeadOperation,
  GetMeOperation,
  LeadRow,
  ListTagsOperation,
  PostOptions,
  PostResult,
} from './types.js';
import { verifyWebhook, type WebhookHeaders } from './webhooks.js';
import type { WebhookEvent } from './webhook-event.js';

export interface LeadIntakeClientOptions {
  /** The service's root URL, e.g. `http://localhost:3000` (a trailing `/api/v1` is accepted too). */
  baseUrl: string;
  /** A workspace API key (`lk..._...`), sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** Attempts per call, the first included (default 5). */
  maxAttempts?: number;
  /** Backoff before retry n: random in [0, min(cap, base * 2^(n-1))] ms (defaults 250 and 20000). */
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** Per attempt, answer included (default 30000). */
  timeoutMs?: number;
  /** The fetch to use (default `globalThis.fetch`); called with one `Request` per attempt. */
  fetch?: FetchImplementation;
  /** How the client waits between attempts (default `setTimeout`); a seam for tests and schedulers. */
  sleep?: (ms: number) => Promise<void>;
  /** Clock in epoch milliseconds (default `Date.now`). */
  now?: () => number;
}

export interface LeadIntakeClient {
  /** `GET /api/v1/me`: the key, its workspace and rate limit. Any valid key may call it. */
  me(): Promise<ApiResult<GetMeOperation>>;
  /** `GET /api/v1/tags` (scope `tags:read`), ordered by name; archived ones only when asked. */
  listTags(options?: { includeArchived?: boolean }): Promise<ApiResult<ListTagsOperation>>;
  /** `GET /api/v1/leads/{id}` (scope `leads:read`). */
  getLead(id: number): Promise<ApiResult<GetLeadOperation>>;
  /** `POST /api/v1/leads` (scope `leads:write`): `201` created, `200` updated, skipped or dry run. */
  createLead(body: CreateLeadBody, options?: PostOptions): Promise<PostResult<CreateLeadOperation>>;
  /** `POST /api/v1/leads/batch` (scope `leads:write`): 1 to 100 rows, one result per row. */
  createBatch(body: CreateBatchBody, options?: PostOptions): Promise<PostResult<CreateBatchOperation>>;
  /** Any number of rows as consecutive batches; one result per row, in the caller's order. */
  createLeads(rows: readonly LeadRow[], options?: CreateLeadsOptions): Promise<CreateLeadsResult>;
  /** Same as the standalone `verifyWebhook`. */
  verifyWebhook(secret: string, headers: WebhookHeaders, rawBody: string | Uint8Array): Promise<WebhookEvent>;
}

const DEFAULT_POLICY: RetryPolicy = { maxAttempts: 5, backoffBaseMs: 250, backoffCapMs: 20_000, timeoutMs: 30_000 };

function policyFrom(options: LeadIntakeClientOptions): RetryPolicy {
  const policy: RetryPolicy = {
    maxAttempts: options.maxAttempts ?? DEFAULT_POLICY.maxAttempts,
    backoffBaseMs: options.backoffBaseMs ?? DEFAULT_POLICY.backoffBaseMs,
    backoffCapMs: options.backoffCapMs ?? DEFAULT_POLICY.backoffCapMs,
    timeoutMs: options.timeoutMs ?? DEFAULT_POLICY.timeoutMs,
  };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) throw new TypeError('maxAttempts must be an integer of at least 1');
  for (const name of ['backoffBaseMs', 'backoffCapMs', 'timeoutMs'] as const) {
    if (!Number.isFinite(policy[name]) || policy[name] < 0) throw new TypeError(`${name} must be a number of milliseconds, 0 or more`);
  }
  return policy;
}

function rootUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`baseUrl must be an absolute http(s) URL such as http://localhost:3000, not ${JSON.stringify(baseUrl)}`);
  }
  return url
    .toString()
    .replace(/\/+$/, '')
    .replace(/\/api\/v1$/, '');
}

const sleepWithTimer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createLeadIntakeClient(options: LeadIntakeClientOptions): LeadIntakeClient {
  if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') throw new TypeError('apiKey is required (a workspace API key)');
  const transport = createRetryingFetch(policyFrom(options), {
    fetch: options.fetch ?? ((request) => globalThis.fetch(request)),
    sleep: options.sleep ?? sleepWithTimer,
    now: options.now ?? Date.now,
    random: Math.random,
  });
  const api = createClient<paths>({
    baseUrl: rootUrl(options.baseUrl),
    fetch: transport.fetch,
    headers: { Authorization: `Bearer ${options.apiKey}`, Accept: 'application/json' },
  });

  // openapi-fetch types each call's request from the document; the outcome becomes a result.
  async function settle<Op>(call: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<ApiResult<Op>> {
    try {
      const outcome = await call;
      return resultFromOutcome<Op>(outcome, transport.attemptsOf(outcome.response));
    } catch (thrown) {
      return resultFromThrown<Op>(thrown);
    }
  }

  const client: LeadIntakeClient = {
    me: () => settle(api.GET('/api/v1/me')),
    listTags: ({ includeArchived } = {}) => settle(api.GET('/api/v1/tags', { params: { query: includeArchived === undefined ? {} : { include_archived: includeArchived } } })),
    getLead: (id) => settle(api.GET('/api/v1/leads/{id}', { params: { path: { id } } })),

    async createLead(body, { idempotencyKey = crypto.randomUUID() } = {}) {
      // The server applies the switches' defaults; the generated request type may still list them as required.
      const sent = body as GeneratedRequestBody<CreateLeadOperation>;
      const result = await settle<CreateLeadOperation>(api.POST('/api/v1/leads', { body: sent, params: { header: { 'Idempotency-Key': idempotencyKey } } }));
      return { ...result, idempotencyKey };
    },

    async createBatch(body, { idempotencyKey = crypto.randomUUID() } = {}) {
      const sent = body as GeneratedRequestBody<CreateBatchOperation>;
      const result = await settle<CreateBatchOperation>(api.POST('/api/v1/leads/batch', { body: sent, params: { header: { 'Idempotency-Key': idempotencyKey } } }));
      return { ...result, idempotencyKey };
    },

    createLeads: (rows, createOptions) => createLeadsInBatches(client.createBatch, rows, createOptions),
    verifyWebhook,
  };
  return client;
}
