import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../config.js';
import type { DeliveryRow } from '../db/schema.js';
import type { AttemptOutcome } from './attempt-repository.js';
import type { ClaimedDelivery } from './claim-repository.js';
import type { Credentials } from './credentials.js';
import { mergeHeaders, type SignatureHeaders } from './headers.js';
import { sendRequest, type SendResult } from './http-sender.js';
import { methodCarriesBody } from './payload.js';

const REPLY_LIMIT = 2 * 1024;
const TEST_REPLY_LIMIT = 64 * 1024;
const MAX_RETRY_DELAY_MS = 24 * 60 * 60 * 1000;

/** A Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
export const newSigningSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

const signers = new Map<string, Webhook>();
function signerFor(secret: string): Webhook {
  let signer = signers.get(secret);
  if (!signer) {
    signer = new Webhook(secret);
    signers.set(secret, signer);
  }
  return signer;
}

/** The URL actually called: GET and DELETE get the payload appended as a query string. */
export function requestUrl(row: Pick<DeliveryRow, 'url' | 'method' | 'body'>): URL {
  const url = new URL(row.url);
  if (!methodCarriesBody(row.method) && row.body) url.search = url.search.length > 1 ? `${url.search.slice(1)}&${row.body}` : row.body;
  return url;
}

/**
 * Standard Webhooks signature over `id.timestamp.content`, where content is the body, or
 * for GET and DELETE the query string as sent (without `?`).
 */
export function signatureHeaders(messageId: string, secret: string | readonly string[], content: string, now = new Date()): SignatureHeaders {
  // Several secrets (a rotation's overlap): one `v1,<signature>` each, space-separated, as
  // Standard Webhooks allows; a receiver accepts the message when any of them verifies.
  const secrets = typeof secret === 'string' ? [secret] : secret;
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': secrets.map((each) => signerFor(each).sign(messageId, now, content)).join(' '),
  };
}

/** Connector push and Send test only: a 2xx whose JSON body says it failed. */
function reportedProblem(reply: string | null): string | null {
  if (!reply) return null;
  let body: unknown;
  try {
    body = JSON.parse(reply);
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const record = body as Record<string, unknown>;
  const nonEmpty = (value: unknown) =>
    value !== undefined &&
    value !== null &&
    value !== false &&
    value !== '' &&
    !(Array.isArray(value) && value.length === 0) &&
    !(typeof value === 'object' && !Array.isArray(value) && Object.keys(value as object).length === 0);
  if (record.success === false) return 'the receiver answered success: false';
  if (record.ok === false) return 'the receiver answered ok: false';
  if (nonEmpty(record.error)) return `the receiver reported an error: ${JSON.stringify(record.error).slice(0, 200)}`;
  if (nonEmpty(record.errors)) return `the receiver reported errors: ${JSON.stringify(record.errors).slice(0, 200)}`;
  return null;
}

function recordIdOf(reply: string | null): string | null {
  if (!reply) return null;
  try {
    const id = (JSON.parse(reply) as { id?: unknown }).id;
    return typeof id === 'string' || typeof id === 'number' ? String(id).slice(0, 255) : null;
  } catch {
    return null;
  }
}

const isRetryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;

export function retryDelayMs(baseMs: number, attempt: number, retryAfterMs: number | null, random = Math.random): number {
  const exponential = baseMs * 2 ** (attempt - 1);
  // Equal jitter: at least half the backoff, so retries of many deliveries spread out
  // without ever coming back sooner than the schedule's lower bound.
  const jittered = exponential / 2 + random() * (exponential / 2);
  return Math.min(MAX_RETRY_DELAY_MS, Math.max(jittered, retryAfterMs ?? 0));
}

const PAUSE_MIN_MS = 1000;
const PAUSE_MAX_MS = 60 * 60 * 1000;

/**
 * How long an endpoint that answered 429 is left alone, and its delivery with it: its
 * `Retry-After` (seconds or a date), never under a second (a `Retry-After: 0` would have it
 * hammered) nor over an hour (a receiver asking for days still gets asked hourly); without
 * one, the delivery's retry schedule.
 */
export function rateLimitPauseMs(baseMs: number, attempt: number, retryAfterMs: number | null, random = Math.random): number {
  if (retryAfterMs === null) return retryDelayMs(baseMs, attempt, null, random);
  return Math.min(PAUSE_MAX_MS, Math.max(PAUSE_MIN_MS, retryAfterMs));
}

/** Decides what one HTTP result means for the delivery: branch, retry, CRM record, and what it says of the endpoint. */
function judge(row: DeliveryRow, result: SendResult, config: Pick<Config, 'WEBHOOK_RETRY_BASE_MS'>, now = Date.now()): AttemptOutcome {
  const attempt = row.attempts + 1;
  const readsReply = row.sender === 'connector_push' || row.sender === 'test';
  const status = result.statusCode;
  const base = {
    workspaceId: row.workspace_id,
    deliveryId: row.id,
    attempt,
    statusCode: status,
    reply: result.reply,
    durationMs: result.durationMs,
    crmRecord: null,
    nextAttemptAt: null,
    endpoint: status !== null && status >= 200 && status < 300 ? 'answered' : 'failed',
    rateLimited: false,
    pauseEndpointUntil: null,
  } as const;
  const retryOrFail = (error: string | null, delayMs = retryDelayMs(config.WEBHOOK_RETRY_BASE_MS, attempt, result.retryAfterMs)): AttemptOutcome => {
    if (attempt < row.max_attempts) return { ...base, error, branch: 'pending', nextAttemptAt: new Date(now + delayMs) };
    return { ...base, error: attempt > 1 ? `${error ?? 'failed'} (gave up after ${attempt} attempts)` : error, branch: 'Failed' };
  };

  if (result.refused) return { ...base, error: result.error, branch: 'Failed' };
  if (status === null) return retryOrFail(result.error ?? 'connection failed');
  if (status >= 200 && status < 300) {
    if (readsReply) {
      const problem = reportedProblem(result.reply);
      if (problem) return { ...base, error: problem, branch: 'Failed' };
    }
    const recordId = row.sender === 'connector_push' && row.lead_id !== null ? recordIdOf(result.reply) : null;
    return { ...base, error: null, branch: 'Delivered', crmRecord: recordId ? { leadId: row.lead_id!, recordId } : null };
  }
  if (status >= 300 && status < 400) return { ...base, error: `HTTP ${status}: redirects are never followed`, branch: 'Failed' };
  // A Send test is never retried, so it never waits either.
  // A 429 is a retryable failure like a 5xx and spends this delivery's attempt (every retryable
  // failure is attempted exactly max_attempts times); what it spares are the endpoint's other
  // deliveries, which wait out the pause instead of being sent into it.
  if (status === 429 && row.sender !== 'test') {
    const pauseMs = rateLimitPauseMs(config.WEBHOOK_RETRY_BASE_MS, attempt, result.retryAfterMs);
    const outcome = retryOrFail('HTTP 429 from the receiver', pauseMs);
    return { ...outcome, rateLimited: true, pauseEndpointUntil: new Date(now + pauseMs) };
  }
  if (isRetryableStatus(status)) return retryOrFail(`HTTP ${status} from the receiver`);
  return { ...base, error: `HTTP ${status} from the receiver`, branch: 'Failed' };
}

/** An attempt that makes no call: recorded Failed with the reason; it says nothing of the endpoint. */
function notSent(row: DeliveryRow, error: string): AttemptOutcome {
  return {
    workspaceId: row.workspace_id,
    deliveryId: row.id,
    attempt: row.attempts + 1,
    statusCode: null,
    reply: null,
    durationMs: 0,
    crmRecord: null,
    nextAttemptAt: null,
    error,
    branch: 'Failed',
    endpoint: null,
    rateLimited: false,
    pauseEndpointUntil: null,
  };
}

/**
 * One attempt of a claimed delivery: add the credentials, sign, send under the network rules,
 * judge. A delivery of a disabled endpoint, or without credentials (its connector or workflow
 * is deleted or gone), fails without a call.
 */
export async function attemptDelivery(row: ClaimedDelivery, credentials: Credentials | undefined, config: Config): Promise<AttemptOutcome> {
  if (row.endpoint_disabled_at !== null) {
    return notSent(
      row,
      `not sent: its endpoint is disabled since ${row.endpoint_disabled_at} (${row.endpoint_disabled_reason}); ` +
        '`connector enable` / `workflow enable` turns it back on, `deliveries recover` sends again what failed meanwhile',
    );
  }
  if (!credentials) return notSent(row, 'not sent: its connector or workflow was deleted (or no longer exists)');
  const url = requestUrl(row);
  const carriesBody = methodCarriesBody(row.method);
  const headers = mergeHeaders(row.headers, credentials.headers);
  Object.assign(headers, signatureHeaders(row.message_id, credentials.signingSecrets, carriesBody ? (row.body ?? '') : url.search.slice(1)));
  const result = await sendRequest(
    { url: url.toString(), method: row.method, headers, body: carriesBody ? row.body : null },
    {
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      allowPrivateNetworks: config.WEBHOOKS_ALLOW_PRIVATE_NETWORKS,
      replyLimit: row.sender === 'test' ? TEST_REPLY_LIMIT : REPLY_LIMIT,
    },
  );
  return judge(row, result, config);
}
