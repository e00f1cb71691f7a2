import { WEBHOOK_EVENT_NAMES, type WebhookEvent } from './webhook-event.js';

// Receivers verify deliveries with the Standard Webhooks scheme the service signs with:
// HMAC-SHA256 over `webhook-id.webhook-timestamp.content`, keyed with the base64 part of the
// `whsec_...` secret, sent as `v1,<base64>` (several, space-separated, while secrets overlap).
// Web Crypto (`crypto.subtle`, global in Node 20+, browsers, Deno, edge runtimes) keeps the
// package free of Node-only imports and of dependencies; it is asynchronous, so are these.

/** Seconds a delivery's `webhook-timestamp` may differ from now (the `standardwebhooks` tolerance). */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

export type WebhookRefusal = 'missing_headers' | 'stale_timestamp' | 'invalid_signature' | 'unexpected_payload';

/** A delivery that must not be trusted; `reason` says why. */
export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: WebhookRefusal,
    message: string,
  ) {
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
    throw new WebhookVerificationError(
      'stale_timestamp',
      `webhook-timestamp is ${Math.abs(skew)} s ${skew > 0 ? 'old' : 'in the future'} (tolerance ${WEBHOOK_TOLERANCE_SECONDS} s): refused as a possible replay`,
    );
  }
}

function base64Bytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

async function signingKey(secret: string) {
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = base64Bytes(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  } catch (error) {
    throw new TypeError(`the webhook secret must be the "whsec_..." signing secret shown when the connector or workflow was created (${(error as Error).message})`);
  }
  if (bytes.length === 0) throw new TypeError('the webhook secret must be the "whsec_..." signing secret shown when the connector or workflow was created (it is empty)');
  return crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
}

/** Checks headers, timestamp and signature of raw content; returns the content as text. */
async function verifiedContent(secret: string, headers: WebhookHeaders, rawContent: string | Uint8Array): Promise<string> {
  const signatureHeaders = readSignatureHeaders(headers);
  checkTimestamp(signatureHeaders['webhook-timestamp']);
  const content = typeof rawContent === 'string' ? rawContent : new TextDecoder().decode(rawContent);
  const key = await signingKey(secret);
  const signed = new TextEncoder().encode(`${signatureHeaders['webhook-id']}.${signatureHeaders['webhook-timestamp']}.${content}`);
  for (const entry of signatureHeaders['webhook-signature'].split(' ')) {
    const [version, signature] = entry.split(',', 2);
    if (version !== 'v1' || !signature) continue;
    let candidate: Uint8Array<ArrayBuffer>;
    try {
      candidate = base64Bytes(signature);
    } catch {
      continue;
    }
    // subtle.verify compares in constant time.
    if (await crypto.subtle.verify('HMAC', key, candidate, signed)) return content;
  }
  throw new WebhookVerificationError(
    'invalid_signature',
    'webhook-signature does not match this secret and content: not sent by this service with this secret, or altered on the way',
  );
}

/**
 * Verifies a JSON delivery (POST, PUT or PATCH with the `json` format) and returns its
 * event. `rawBody` must be the exact bytes received, before any JSON parsing. Throws
 * `WebhookVerificationError` for missing headers, a timestamp outside 5 minutes, a
 * signature that does not match, or a body that is not one of the service's events.
 */
export async function verifyWebhook(secret: string, headers: WebhookHeaders, rawBody: string | Uint8Array): Promise<WebhookEvent> {
  const content = await verifiedContent(secret, headers, rawBody);
  let payload: unknown;
  try {
    payload = JSON.parse(content);
  } catch {
    throw new WebhookVerificationError('unexpected_payload', 'the signed body is not JSON: use verifyWebhookForm for form-encoded bodies and GET/DELETE query strings');
  }
  const record = payload as Record<string, unknown> | null;
  if (
    typeof record !== 'object' ||
    record === null ||
    Array.isArray(record) ||
    !WEBHOOK_EVENT_NAMES.includes(record.event as WebhookEvent['event']) ||
    typeof record.sent_at !== 'string'
  ) {
    throw new WebhookVerificationError(
      'unexpected_payload',
      `the signed body is not an event of this service (expected an object with event ${WEBHOOK_EVENT_NAMES.join(' | ')} and sent_at)`,
    );
  }
  return record as WebhookEvent;
}

/**
 * Verifies a form-encoded delivery (`form` format) or a GET/DELETE delivery, whose signed
 * content is the query string as sent, without `?`. Values are text: lists comma-joined,
 * `null` empty, objects as JSON.
 */
export async function verifyWebhookForm(secret: string, headers: WebhookHeaders, rawContent: string | Uint8Array): Promise<URLSearchParams> {
  return new URLSearchParams(await verifiedContent(secret, headers, rawContent));
}
