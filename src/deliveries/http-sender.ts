import http from 'node:http';
import https from 'node:https';
import type { LookupAddress } from 'node:dns';
import { checkUrlShape, pinnedLookup, RefusedDestination, resolveDestination, TransientResolutionError } from './network-guard.js';

export interface OutboundRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** Bytes of the reply kept; the rest is not read. */
  replyLimit: number;
}

export interface SendResult {
  statusCode: number | null;
  /** The reply body, truncated to the limit (null when there was no reply). */
  reply: string | null;
  contentType: string | null;
  /** The Location header of a 3xx (never followed here). */
  location: string | null;
  /** Short reason when no HTTP status came back, or the destination was refused. */
  error: string | null;
  /** Refused by the network rules: never called, never retried. */
  refused: boolean;
  retryAfterMs: number | null;
  durationMs: number;
}

// One client with the fixed rules, so a request merges only what varies. Keep-alive pools
// per process: receivers usually get many messages in a row. got and its dependencies load on
// the first send: processes that never send (the API, most admin CLI commands) start without them.
type Got = typeof import('got');
interface Outbound {
  client: ReturnType<Got['got']['extend']>;
  RequestError: Got['RequestError'];
}
let outbound: Promise<Outbound> | undefined;

function outboundClient(): Promise<Outbound> {
  outbound ??= import('got').then(({ got, RequestError }) => ({
    client: got.extend({
      agent: {
        http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
        https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
      },
      followRedirect: false,
      throwHttpErrors: false,
      retry: { limit: 0 },
      decompress: true,
    }),
    RequestError,
  }));
  return outbound;
}

function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function shortError(error: unknown, RequestError: Outbound['RequestError']): string {
  if (error instanceof RequestError) {
    if (error.code === 'ETIMEDOUT' || error.name === 'TimeoutError') return 'timeout: the receiver did not answer in time';
    return `${error.code ?? 'request_failed'}: ${error.message}`.slice(0, 300);
  }
  return (error instanceof Error ? error.message : String(error)).slice(0, 300);
}

/**
 * One HTTP attempt under the network rules: URL shape, every resolved address checked,
 * the socket pinned to those addresses, no redirects followed, a timeout for the whole
 * exchange and only `replyLimit` bytes of the reply read.
 */
export async function sendRequest(request: OutboundRequest, options: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const finish = (partial: Partial<SendResult>): SendResult => ({
    statusCode: null,
    reply: null,
    contentType: null,
    location: null,
    error: null,
    refused: false,
    retryAfterMs: null,
    ...partial,
    durationMs: Math.round(performance.now() - started),
  });

  let url: URL;
  let addresses: LookupAddress[];
  try {
    url = checkUrlShape(request.url);
    addresses = await resolveDestination(url, options.allowPrivateNetworks);
  } catch (error) {
    if (error instanceof RefusedDestination) return finish({ error: `refused: ${error.message}`, refused: true });
    if (error instanceof TransientResolutionError) return finish({ error: error.message });
    throw error;
  }
  return exchange(await outboundClient(), url, addresses, request, options, finish);
}

/** The HTTP exchange itself, with the checked addresses only; every outcome resolves (nothing throws). */
function exchange(
  { client, RequestError }: Outbound,
  url: URL,
  addresses: LookupAddress[],
  request: OutboundRequest,
  options: SendOptions,
  finish: (partial: Partial<SendResult>) => SendResult,
): Promise<SendResult> {
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const settle = (result: Partial<SendResult>) => {
      if (settled) return;
      settled = true;
      resolve(finish(result));
    };
    const stream = client.stream(url, {
      method: request.method as 'POST',
      headers: request.headers,
      body: request.body ?? undefined,
      timeout: { request: options.timeoutMs },
      dnsLookup: pinnedLookup(addresses) as never,
    });
    // In stream mode got waits for a request body on every method but GET and HEAD.
    if (request.body === null && request.method !== 'GET' && request.method !== 'HEAD') stream.end();
    stream.on('response', (response: http.IncomingMessage) => {
      const statusCode = response.statusCode ?? null;
      const chunks: Buffer[] = [];
      let kept = 0;
      const done = () =>
        settle({
          statusCode,
          reply: Buffer.concat(chunks).toString('utf8'),
          contentType: response.headers['content-type'] ?? null,
          location: response.headers.location ?? null,
          retryAfterMs: parseRetryAfter(response.headers['retry-after'] as string | undefined),
        });
      stream.on('data', (chunk: Buffer) => {
        if (kept >= options.replyLimit) return;
        const part = chunk.subarray(0, options.replyLimit - kept);
        chunks.push(part);
        kept += part.length;
        if (kept >= options.replyLimit) {
          done();
          stream.destroy();
        }
      });
      stream.on('end', done);
      // An error after the status arrived (reset mid-body, timeout) keeps the status.
      stream.on('error', done);
    });
    stream.on('error', (error: unknown) => {
      if (settled) return;
      settle({ error: shortError(error, RequestError) });
    });
  });
}
