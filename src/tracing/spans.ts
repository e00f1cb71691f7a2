import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Link, type Span, type SpanOptions } from '@opentelemetry/api';
import { TRACING } from './switch.js';

// The spans this project makes itself, through the OpenTelemetry API (a no-op without the SDK,
// and skipped entirely when tracing is off), and the trace context it stores with an outbox
// event: the W3C `traceparent` and `tracestate` of the request that wrote it, as JSON text.

const tracer = trace.getTracer('lead-intake-api');

/** The active trace context as stored with an event (JSON of the W3C headers); null when nothing is traced. */
export function storedTraceContext(): string | null {
  if (!TRACING) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? JSON.stringify(carrier) : null;
}

/** The context a stored trace context continues (the root context when none was stored or it cannot be read). */
export function storedContext(stored: string | null | undefined): Context {
  if (!stored) return ROOT_CONTEXT;
  try {
    return propagation.extract(ROOT_CONTEXT, JSON.parse(stored) as Record<string, string>);
  } catch {
    return ROOT_CONTEXT;
  }
}

/** The context of the caller, kept for a span started later elsewhere (a write group). */
export const callerContext = (): Context | undefined => (TRACING ? context.active() : undefined);

/** A link to the span of each context that has one. */
export function linksTo(contexts: ReadonlyArray<Context | undefined>): Link[] {
  return contexts.flatMap((each) => {
    const spanContext = each && trace.getSpanContext(each);
    return spanContext ? [{ context: spanContext }] : [];
  });
}

/** The trace id of the active span; null when none is recording. */
export function activeTraceId(): string | null {
  if (!TRACING) return null;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext().traceId : null;
}

/**
 * Runs `work` in a span named `name`, a child of `parent` (default: the active context),
 * ended when it settles, an error recorded on it. Without tracing: `work` alone.
 */
export async function inSpan<T>(name: string, options: SpanOptions & { parent?: Context }, work: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!TRACING) return work(undefined);
  const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, ...options }, options.parent ?? context.active());
  try {
    return await context.with(trace.setSpan(options.parent ?? context.active(), span), () => work(span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    span.end();
  }
}

/**
 * A span in each trace a batch carried (the events' stored contexts, each once), a child of
 * that context from `startedAt` to now, linked to the batch's own span: so each request's trace
 * shows the work done for it in a batch shared with others.
 */
export function eventSpans(name: string, startedAt: number, stored: ReadonlyArray<string | null>, batch: Span | undefined): void {
  if (!TRACING) return;
  const links = batch ? [{ context: batch.spanContext() }] : [];
  for (const each of new Set(stored)) {
    if (each) tracer.startSpan(name, { kind: SpanKind.CONSUMER, startTime: startedAt, links }, storedContext(each)).end();
  }
}

/** The active span's ids for a log line (pino's mixin); nothing outside a recording span. */
export function logTraceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

export { SpanKind, type Span };
