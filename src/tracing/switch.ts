// Whether this process traces, decided once at its start from OpenTelemetry's own variables.
// This file imports nothing: with tracing off, no module of the SDK, its exporters or its
// instrumentations is ever loaded (sdk.ts is imported only when asked for).

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only variant) set, or OTEL_TRACES_EXPORTER naming
 * otlp; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off again, as in the SDK.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((name) => name.trim().toLowerCase());
  if (exporters.includes('none')) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) || exporters.includes('otlp');
}

/** Read once: the spans this project makes itself are skipped entirely when it is off. */
export const TRACING = tracingRequested();

/** Flushes the spans still buffered (the process is about to exit); nothing when tracing is off. */
let flush: () => Promise<void> = async () => {};

/**
 * Starts the OpenTelemetry SDK when asked for, before the process imports what it instruments
 * (express, pg, ioredis, node:http): each entry point calls this first and imports the rest after.
 */
export async function startTracing(serviceName: string): Promise<void> {
  if (!TRACING) return;
  const { startSdk } = await import('./sdk.js');
  flush = await startSdk(serviceName);
}

export const flushTraces = (): Promise<void> => flush();
