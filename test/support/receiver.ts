import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { DeliverySender } from '../../src/db/schema.js';
import { WEBHOOK_OF_SENDER, webhookProblems } from './webhook-contract.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  /** The raw query string without `?`. */
  query: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Date.now() when the request was complete. */
  receivedAt: number;
}

export interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Hold the answer this long (timeouts). */
  delayMs?: number;
}

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Replies used in order for the next requests; afterwards `fallback`. */
  queue(...replies: Reply[]): void;
  fallback: Reply;
  /** Fixed replies by path, ahead of the queue. */
  routes: Record<string, Reply>;
  /** Forgets requests, queued replies and routes (not the deliveries still to check); the fallback answers 200 again. */
  reset(): void;
  /**
   * Checks every delivery received since the last check against the OpenAPI document's
   * webhook for its sender (see webhook-contract.ts); returns the violations, one line each.
   */
  checkDeliveries(): Promise<string[]>;
  /** Stops the receiver; fails when a delivery not checked yet breaks the document. */
  close(): Promise<void>;
}

// The website analysis fetches pages with this User-Agent: such a request is no delivery.
const ANALYZER_USER_AGENT = /^LeadIntake-Analyzer\//;

/** The sender of each delivery by message id (`webhook-id`), read from the deliveries table. */
async function sendersOf(databaseUrl: string, messageIds: string[]): Promise<Map<string, DeliverySender>> {
  if (messageIds.length === 0) return new Map();
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query<{ message_id: string; sender: DeliverySender }>('SELECT DISTINCT message_id, sender FROM deliveries WHERE message_id = ANY($1::text[])', [
      messageIds,
    ]);
    return new Map(rows.map((row) => [row.message_id, row.sender]));
  } finally {
    await client.end();
  }
}

async function contractViolations(databaseUrl: string, requests: readonly ReceivedRequest[]): Promise<string[]> {
  const deliveries = requests.filter((request) => !ANALYZER_USER_AGENT.test(String(request.headers['user-agent'] ?? '')));
  const messageId = (request: ReceivedRequest) => String(request.headers['webhook-id'] ?? '');
  const senders = await sendersOf(databaseUrl, [...new Set(deliveries.map(messageId).filter(Boolean))]);
  return deliveries.flatMap((request) => {
    const sender = senders.get(messageId(request));
    const problems = sender ? webhookProblems(WEBHOOK_OF_SENDER[sender], request) : [`webhook-id ${JSON.stringify(messageId(request))} names no delivery of this database`];
    return problems.map((problem) => `${request.method} ${request.path} (${sender ?? 'unknown sender'}, ${messageId(request) || 'no webhook-id'}): ${problem}`);
  });
}

/**
 * A real HTTP receiver on 127.0.0.1 that records every request and answers as told. Every
 * delivery it gets is kept for `checkDeliveries()` against the OpenAPI document, whatever
 * `reset()` forgets; `databaseUrl` is the database of the service that sends to it.
 */
export async function startReceiver(options: { databaseUrl: string }): Promise<Receiver> {
  const unchecked: ReceivedRequest[] = [];
  const queued: Reply[] = [];
  const defaultReply: Reply = { status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' } };
  const receiver = { requests: [] as ReceivedRequest[], fallback: defaultReply, routes: {} } as Receiver;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const [path, query = ''] = (request.url ?? '/').split(/\?(.*)/s, 2) as [string, string?];
      const received = { method: request.method ?? '', path, query, headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
      receiver.requests.push(received);
      unchecked.push(received);
      const reply = receiver.routes[path] ?? queued.shift() ?? receiver.fallback;
      const send = () => {
        if (response.destroyed) return;
        response.writeHead(reply.status, reply.headers ?? {});
        response.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  server.keepAliveTimeout = 1000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    port,
    url: `http://127.0.0.1:${port}`,
    queue: (...replies: Reply[]) => {
      queued.push(...replies);
    },
    reset: () => {
      queued.length = 0;
      receiver.requests.length = 0;
      receiver.routes = {};
      receiver.fallback = defaultReply;
    },
    checkDeliveries: () => contractViolations(options.databaseUrl, unchecked.splice(0)),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await expectDeliveriesMatchDocument(receiver);
    },
  });
}

/**
 * Throws when a delivery the receiver got since the last check breaks the OpenAPI document.
 * A plain throw, not jest's expect: scripts/faults.ts loads this module outside jest.
 */
export async function expectDeliveriesMatchDocument(receiver: Receiver): Promise<void> {
  const violations = await receiver.checkDeliveries();
  if (violations.length > 0) throw new Error(`deliveries breaking the OpenAPI document's webhooks:\n${violations.join('\n')}`);
}
