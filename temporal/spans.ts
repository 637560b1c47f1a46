// One way to run work in a span of lockwarden's tracer, for workflows, activities, clients alike.
import { type Attributes, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/** The tracer name of lockwarden's own spans (a session's attempts, decisions, waits; lock calls). */
export const LOCKWARDEN_TRACER = 'lockwarden';

/**
 * Runs `work` in a span named `name`, a child of the span active now, ended when `work` settles.
 * A failure sets the span's status to the error's class, not its message: a message may quote a URL
 * or a caller's text. Attributes hold names, counts and outcomes only, never a model's text or a
 * credential. With no tracer provider registered (tracing not configured, or a workflow without
 * Temporal's OpenTelemetry plugin) the tracer does nothing. Only the API is imported: sandbox-safe.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  return trace.getTracer(LOCKWARDEN_TRACER).startActiveSpan(name, { attributes, kind }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.name ?? 'error' });
      throw error;
    } finally {
      span.end();
    }
  });
}
