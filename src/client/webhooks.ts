import { Webhook } from 'standardwebhooks';
import { WEBHOOK_EVENT_NAMES, type WebhookEvent } from './webhook-event.js';

// Receivers verify deliveries with the Standard Webhooks scheme the service signs with
// (docs/outbound.md "Signatures"): HMAC-SHA256 over `webhook-id.webhook-timestamp.content`.

/** Seconds a delivery's `webhook-timestamp` may differ from now (the `standardwebhooks` tolerance). */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

export type WebhookRefusal = 'missing_headers' | 'stale_timestamp' | 'invalid_signature' | 'unexpected_payload';

/** A delivery that must not be trusted; `reason` says why. */
export class WebhookVerificationError extends Error {
  constructor(readonly reason: WebhookRefusal, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** A fetch `Headers`, Node's `req.headers`, or a plain object (names in any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const SIGNATURE_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function readSignatureHeaders(headers: WebhookHeaders): Record<(typeof SIGNATURE_HEADERS)[number], string> {
  const lookup = new Map<string, string>();
  if (headers instanceof Headers) {
    headers.forEach((value, name) => lookup.set(name.toLowerCase(), value));
  } else {
    for (const [name, value] of Object.entries(headers)) {
      const first = Array.isArray(value) ? value[0] : value;
      if (first !== undefined) lookup.set(name.toLowerCase(), first);
    }
  }
  const missing = SIGNATURE_HEADERS.filter((name) => !lookup.get(name));
  if (missing.length > 0) throw new WebhookVerificationError('missing_headers', `missing signature header${missing.length === 1 ? '' : 's'}: ${missing.join(', ')}`);
  return { 'webhook-id': lookup.get('webhook-id')!, 'webhook-timestamp': lookup.get('webhook-timestamp')!, 'webhook-signature': lookup.get('webhook-signature')! };
}

function checkTimestamp(value: string): void {
  if (!/^\d+$/.test(value)) throw new WebhookVerificationError('stale_timestamp', `webhook-timestamp is not Unix seconds: ${JSON.stringify(value.slice(0, 40))}`);
  const skew = Math.floor(Date.now() / 1000) - Number(value);
  if (Math.abs(skew) > WEBHOOK_TOLERANCE_SECONDS) {
    throw new WebhookVerificationError('stale_timestamp', `webhook-timestamp is ${Math.abs(skew)} s ${skew > 0 ? 'old' : 'in the future'} (tolerance ${WEBHOOK_TOLERANCE_SECONDS} s): refused as a possible replay`);
  }
}

function signer(secret: string): Webhook {
  try {
    return new Webhook(secret);
  } catch (error) {
    throw new TypeError(`the webhook secret must be the "whsec_..." signing secret shown when the connector or workflow was created (${(error as Error).message})`);
  }
}

/** Checks headers, timestamp and signature of raw content; returns the content as text. */
function verifiedContent(secret: string, headers: WebhookHeaders, rawContent: string | Uint8Array): string {
  const signatureHeaders = readSignatureHeaders(headers);
  checkTimestamp(signatureHeaders['webhook-timestamp']);
  const content = typeof rawContent === 'string' ? rawContent : new TextDecoder().decode(rawContent);
  try {
    signer(secret).verify(content, signatureHeaders, { jsonParse: false });
  } catch (error) {
    if (error instanceof TypeError) throw error;
    throw new WebhookVerificationError('invalid_signature', 'webhook-signature does not match this secret and content: not sent by this service with this secret, or altered on the way');
  }
  return content;
}

/**
 * Verifies a JSON delivery (POST, PUT or PATCH with the `json` format) and returns its
 * event. `rawBody` must be the exact bytes received, before any JSON parsing. Throws
 * `WebhookVerificationError` for missing headers, a timestamp outside 5 minutes, a
 * signature that does not match, or a body that is not one of the service's events.
 */
export function verifyWebhook(secret: string, headers: WebhookHeaders, rawBody: string | Uint8Array): WebhookEvent {
  const content = verifiedContent(secret, headers, rawBody);
  let payload: unknown;
  try {
    payload = JSON.parse(content);
  } catch {
    throw new WebhookVerificationError('unexpected_payload', 'the signed body is not JSON: use verifyWebhookForm for form-encoded bodies and GET/DELETE query strings');
  }
  const record = payload as Record<string, unknown> | null;
  if (typeof record !== 'object' || record === null || Array.isArray(record)
    || !WEBHOOK_EVENT_NAMES.includes(record.event as WebhookEvent['event']) || typeof record.sent_at !== 'string') {
    throw new WebhookVerificationError('unexpected_payload', `the signed body is not an event of this service (expected an object with event ${WEBHOOK_EVENT_NAMES.join(' | ')} and sent_at)`);
  }
  return record as WebhookEvent;
}

/**
 * Verifies a form-encoded delivery (`form` format) or a GET/DELETE delivery, whose signed
 * content is the query string as sent, without `?`. Values are text: lists comma-joined,
 * `null` empty, objects as JSON.
 */
export function verifyWebhookForm(secret: string, headers: WebhookHeaders, rawContent: string | Uint8Array): URLSearchParams {
  return new URLSearchParams(verifiedContent(secret, headers, rawContent));
}
