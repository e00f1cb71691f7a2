import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

// An OTLP/HTTP receiver for traces in the http/json encoding (OTEL_EXPORTER_OTLP_PROTOCOL=
// http/json): what a tracing backend gets from the service, collected span by span.

export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  service: string;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  status: { code?: number };
}

export interface Collector {
  /** What to give OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  spans: CollectedSpan[];
  /** Request paths the exporters posted to (`/v1/traces`, ...). */
  paths: string[];
  close(): Promise<void>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };
type OtlpSpan = Omit<CollectedSpan, 'service' | 'attributes' | 'links'> & { attributes?: OtlpAttribute[]; links?: Array<{ traceId: string; spanId: string }> };
type OtlpTraces = { resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> };

const valueOf = (value: OtlpValue) => value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue;
const attributesOf = (attributes: OtlpAttribute[] = []) => Object.fromEntries(attributes.map((attribute) => [attribute.key, valueOf(attribute.value)]));
/** Ids are hex in OTLP/JSON; a producer that sends base64 (the protobuf JSON mapping) is read too. */
const hex = (id: string | undefined) => (!id ? '' : /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex'));

export async function startCollector(): Promise<Collector> {
  const collector = { spans: [] as CollectedSpan[], paths: [] as string[] } as Collector;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      collector.paths.push(request.url ?? '');
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpTraces;
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
          for (const scope of resourceSpans.scopeSpans ?? [])
            for (const span of scope.spans ?? [])
              collector.spans.push({
                ...span,
                traceId: hex(span.traceId),
                spanId: hex(span.spanId),
                parentSpanId: hex(span.parentSpanId),
                service,
                attributes: attributesOf(span.attributes),
                links: (span.links ?? []).map((link) => ({ traceId: hex(link.traceId), spanId: hex(link.spanId) })),
              });
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return Object.assign(collector, {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
