import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  /** The raw query string without `?`. */
  query: string;
  headers: http.IncomingHttpHeaders;
  body: string;
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
  /** Forgets requests, queued replies and routes; the fallback answers 200 again. */
  reset(): void;
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.1 that records every request and answers as told. */
export async function startReceiver(): Promise<Receiver> {
  const queued: Reply[] = [];
  const defaultReply: Reply = { status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' } };
  const receiver = { requests: [] as ReceivedRequest[], fallback: defaultReply, routes: {} } as Receiver;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const [path, query = ''] = (request.url ?? '/').split(/\?(.*)/s, 2) as [string, string?];
      receiver.requests.push({ method: request.method ?? '', path, query, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
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
    queue: (...replies: Reply[]) => { queued.push(...replies); },
    reset: () => { queued.length = 0; receiver.requests.length = 0; receiver.routes = {}; receiver.fallback = defaultReply; },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
