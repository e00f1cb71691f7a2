import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { createLeadIntakeClient, type LeadIntakeClient, type LeadIntakeClientOptions } from '../../src/client/index.js';
import type { Tenant } from './fixtures.js';
import { fetchCheckedAgainstDocument } from './document-check.js';

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
  const sockets = new Set<net.Socket>();
  const state = { connections: 0 };
  const server = net.createServer((client) => {
    const first = state.connections === 0;
    state.connections++;
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    if (first)
      upstream.once('data', () => {
        client.destroy();
        upstream.destroy();
      });
    else upstream.pipe(client);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get connections() {
      return state.connections;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
