// What a session's own spans (temporal/spans.ts: each attempt, decision and wait) say of it, and the
// link from a wait to the release that ended it. They nest under the spans of Temporal's
// OpenTelemetry plugin, whose interceptors register the sandbox's tracer provider; without the plugin
// the API's tracer does nothing. Spans never change what the workflow does: replay-safe.
import { type Attributes, type Span, type SpanContext, trace } from '@opentelemetry/api';
import { workflowInfo } from '@temporalio/workflow';

/** The attributes every lockwarden span of a session carries: find a trace by its session id. */
export function sessionAttributes(session: { key: string; requester: string }): Attributes {
  return {
    'lockwarden.session_id': workflowInfo().workflowId,
    'lockwarden.key': session.key,
    'lockwarden.requester': session.requester,
  };
}

/**
 * The span handling the message being handled now, when that message carried a trace (a release's
 * wake-up sent by the releasing session's activity): a wait it ends links to it, so a trace store
 * leads from a waiter's wake-up to the release in the holder's trace.
 */
export function messageSpanContext(): SpanContext | null {
  const context = trace.getActiveSpan()?.spanContext();
  return context && trace.isSpanContextValid(context) ? context : null;
}

/** Links `span` to the release (or other message) that ended its wait, when that was traced. */
export function linkWake(span: Span, origin: SpanContext | null): void {
  if (origin) span.addLink({ context: origin, attributes: { 'lockwarden.link': 'woken-by' } });
}
