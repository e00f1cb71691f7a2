import { register } from 'node:module';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';

// The OpenTelemetry SDK, loaded only when switch.ts finds it asked for. Everything it reads
// is the SDK's own environment (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL
// http/protobuf or http/json, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES,
// ...). Traces only: the process's metrics stay with Prometheus (src/metrics/).

/** Paths that answer load balancers and scrapers: a span per probe would bury the requests. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/** Starts the SDK and its instrumentations; returns what flushes and stops it. */
export async function startSdk(serviceName: string): Promise<() => Promise<void>> {
  // The service is ES modules: instrumenting express, pg and ioredis as they are imported needs
  // the loader hook, told only about the modules the instrumentations ask for.
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME wins when set; otherwise the process's own name.
    ...(process.env.OTEL_SERVICE_NAME ? {} : { serviceName }),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (request) => PROBES.has((request.url ?? '').split('?')[0]!) }),
      // Each middleware a span of its own would be most of a request's spans: routers and handlers only.
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      // Statements and commands outside any span (the worker's polls) would each start a trace of their own.
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  await waitForAllMessagesAcknowledged();
  return () => sdk.shutdown();
}
