import { createLeadIntakeClient, type LeadIntakeClient, type LeadIntakeClientOptions } from '../../src/client/index.js';
import type { Tenant } from './fixtures.js';
import { fetchCheckedAgainstDocument } from './document-check.js';
import { startTcpProxy } from './tcp-proxy.js';

export interface SentRequest {
  method: string;
  path: string;
  idempotencyKey: string | null;
  body: unknown;
}

/** A fetch that records every attempt the client makes, then sends it with the global fetch. */
export function recordingFetch(answerFirst: Array<() => Response> = []) {
  const sent: SentRequest[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    const text = request.body ? await request.clone().text() : '';
    sent.push({ method: request.method, path: new URL(request.url).pathname, idempotencyKey: request.headers.get('idempotency-key'), body: text ? JSON.parse(text) : null });
    const canned = answerFirst.shift();
    return canned ? canned() : fetchCheckedAgainstDocument(request);
  };
  return { sent, fetch };
}

/** Records the client's waits and returns at once (the waits are asserted, not served). */
export function recordingSleep(onSleep: (ms: number) => Promise<void> | void = () => {}) {
  const waits: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
    await onSleep(ms);
  };
  return { waits, sleep };
}

export function clientFor(url: string, tenant: Tenant, options: Partial<LeadIntakeClientOptions> = {}): LeadIntakeClient {
  return createLeadIntakeClient({ baseUrl: url, apiKey: tenant.token, fetch: (request) => fetchCheckedAgainstDocument(request), ...options });
}

/**
 * A TCP proxy in front of the service. The first connection's request is forwarded, but
 * when the service's answer starts to arrive the proxy destroys both sockets instead of
 * passing it on: the service processed the request, the client saw the connection drop.
 * Later connections are forwarded both ways.
 */
export async function startDroppingProxy(targetPort: number): Promise<{ url: string; connections: number; close(): Promise<void> }> {
  const proxy = await startTcpProxy(targetPort, ({ index, client, upstream }, chunk) => {
    if (index > 0) client.write(chunk);
    else {
      client.destroy();
      upstream.destroy();
    }
  });
  return {
    url: `http://127.0.0.1:${proxy.port}`,
    get connections() {
      return proxy.connections;
    },
    close: proxy.close,
  };
}
