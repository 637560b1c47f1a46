// A span for each lock call a session's trace must show: the fast path, renewals, releases.
import { type Attributes, SpanKind } from '@opentelemetry/api';
import { inSpan } from '../temporal/spans';
import type { AcquireAttempt, FencedActionResult } from '../policy/lockContract/lockSchemas';
import type { LockService } from './lockService';

/**
 * `inner`, with a client span around each call on a session's path (tryAcquire, renew, release,
 * leave): the key, the requester or holder, the backend, the outcome (`granted`, a denial's code,
 * `renewed`, a refusal's reason) and the service time the caller waited. The spans nest under the
 * activity's span of Temporal's OpenTelemetry plugin; with no tracer provider registered the API's
 * tracer does nothing, so an untraced worker pays one no-op call. No token other than the service's
 * own answer, and no credential, is ever an attribute: the URL is not seen here.
 */
export function tracedLockService(inner: LockService): LockService {
  const backend = inner.backend;
  function call<T>(
    name: string,
    attributes: Attributes,
    run: () => Promise<T>,
    outcome: (answer: T) => Attributes,
  ) {
    const started = performance.now();
    const span = { 'lockwarden.backend': backend, ...attributes };
    return inSpan(
      `lock.${name}`,
      span,
      async (active) => {
        try {
          const answer = await run();
          active.setAttributes(outcome(answer));
          return answer;
        } finally {
          active.setAttribute('lockwarden.service_ms', Math.round((performance.now() - started) * 100) / 100);
        }
      },
      SpanKind.CLIENT,
    );
  }
  return {
    backend,
    minTtlMs: inner.minTtlMs,
    tryAcquire: (request) =>
      call(
        'tryAcquire',
        { 'lockwarden.key': field(request, 'key'), 'lockwarden.requester': field(request, 'requester') },
        () => inner.tryAcquire(request),
        attemptOutcome,
      ),
    renew: (target) =>
      call(
        'renew',
        fencedAttributes(target),
        () => inner.renew(target),
        (r) => fencedOutcome(r, 'renewed'),
      ),
    release: (target) =>
      call(
        'release',
        fencedAttributes(target),
        () => inner.release(target),
        (r) => fencedOutcome(r, 'released'),
      ),
    leave: (waiter) =>
      call(
        'leave',
        { 'lockwarden.key': field(waiter, 'key'), 'lockwarden.requester': field(waiter, 'requester') },
        () => inner.leave(waiter),
        () => ({ 'lockwarden.outcome': 'left' }),
      ),
    // Reads for the sweep, the wait-for graph and lockctl are not on a session's path: not traced.
    inspect: (key) => inner.inspect(key),
    position: (waiter) => inner.position(waiter),
    holdings: () => inner.holdings(),
    waits: () => inner.waits(),
    stalledQueues: () => inner.stalledQueues(),
    leasesRunningLow: (fractionLeft) => inner.leasesRunningLow(fractionLeft),
    forgetIdleKeys: () => inner.forgetIdleKeys(),
    close: () => inner.close(),
  };
}

function attemptOutcome(attempt: AcquireAttempt): Attributes {
  if (attempt.granted) return { 'lockwarden.outcome': 'granted', 'lockwarden.token': attempt.lease.token };
  const { denial } = attempt;
  return {
    'lockwarden.outcome': denial.code,
    ...(denial.holder ? { 'lockwarden.holder': denial.holder } : {}),
    ...(denial.position !== null ? { 'lockwarden.position': denial.position } : {}),
  };
}

function fencedAttributes(target: unknown): Attributes {
  return {
    'lockwarden.key': field(target, 'key'),
    'lockwarden.holder': field(target, 'holder'),
    'lockwarden.token': field(target, 'token'),
  };
}

// A field of a call's input for a span, read before the backend checks the input: whatever the
// caller passed (null, a number, nothing) becomes a string, and the backend's check answers it.
function field(input: unknown, name: string): string {
  const value =
    typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : String(value);
}

function fencedOutcome(result: FencedActionResult, done: string): Attributes {
  return { 'lockwarden.outcome': result.ok ? done : result.reason };
}
