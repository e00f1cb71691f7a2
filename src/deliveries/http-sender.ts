import http from 'node:http';
import https from 'node:https';
import type { LookupAddress } from 'node:dns';
import zlib from 'node:zlib';
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

// node's own client, with keep-alive pools per process: receivers usually get many messages in
// a row. A client library's per-request work (merging options, hooks, its streams) was most of
// a delivery's CPU in the worker, which shares `npm start`'s process with the API; the rules
// below are all a delivery needs: no redirects followed, no retries, one timeout for the whole
// exchange, the reply decompressed and read up to a limit.
const AGENTS = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

const TIMED_OUT = 'timeout: the receiver did not answer in time';

/** A decompressing stream for the reply's Content-Encoding, or none when it is sent as is. */
function decoderFor(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      return null;
  }
}

function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function shortError(error: unknown): string {
  if (error instanceof Error) return `${(error as NodeJS.ErrnoException).code ?? 'request_failed'}: ${error.message}`.slice(0, 300);
  return String(error).slice(0, 300);
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
  return exchange(url, addresses, request, options, finish);
}

/** The HTTP exchange itself, with the checked addresses only; every outcome resolves (nothing throws). */
function exchange(url: URL, addresses: LookupAddress[], request: OutboundRequest, options: SendOptions, finish: (partial: Partial<SendResult>) => SendResult): Promise<SendResult> {
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    // Once the status has arrived, how the reply ends (read, cut at the limit, reset, timed out) keeps it.
    let replied: (() => void) | null = null;
    let timer: NodeJS.Timeout | undefined;
    const settle = (result: Partial<SendResult>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(finish(result));
    };
    const body = request.body === null ? null : Buffer.from(request.body, 'utf8');
    const headers: Record<string, string> = { ...request.headers, 'accept-encoding': 'gzip, deflate, br' };
    if (body !== null) headers['content-length'] = String(body.length);
    let outgoing: http.ClientRequest;
    try {
      const client = url.protocol === 'https:' ? https : http;
      outgoing = client.request(
        url,
        { method: request.method, headers, agent: AGENTS[url.protocol as keyof typeof AGENTS], lookup: pinnedLookup(addresses) as never },
        (response) => {
          const chunks: Buffer[] = [];
          let kept = 0;
          const done = (replied = () =>
            settle({
              statusCode: response.statusCode ?? null,
              reply: Buffer.concat(chunks).toString('utf8'),
              contentType: response.headers['content-type'] ?? null,
              location: response.headers.location ?? null,
              retryAfterMs: parseRetryAfter(response.headers['retry-after']),
            }));
          const decoder = decoderFor(response.headers['content-encoding']);
          const reply = decoder ? response.pipe(decoder) : response;
          reply.on('data', (chunk: Buffer) => {
            if (kept >= options.replyLimit) return;
            const part = chunk.subarray(0, options.replyLimit - kept);
            chunks.push(part);
            kept += part.length;
            if (kept >= options.replyLimit) {
              done();
              outgoing.destroy();
            }
          });
          reply.on('end', done);
          reply.on('error', done);
          response.on('error', done);
        },
      );
    } catch (error) {
      // A header value node refuses: nothing was sent.
      return settle({ error: shortError(error) });
    }
    timer = setTimeout(() => {
      if (replied) replied();
      else settle({ error: TIMED_OUT });
      outgoing.destroy();
    }, options.timeoutMs);
    outgoing.on('error', (error) => (replied ? replied() : settle({ error: shortError(error) })));
    outgoing.end(body ?? undefined);
  });
}
