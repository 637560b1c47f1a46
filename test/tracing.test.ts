import { Client } from '@temporalio/client';
import { setTimeout as delay } from 'node:timers/promises';
import { createSessionWaker } from '../activities/sessionSignals';
import { acquire, release, stateOf } from '../client/lockwardenClient';
import { acquisitionWorkflowId } from '../policy/constants';
import { Jaeger, type JaegerSpan, type JaegerTrace } from '../devkit/jaeger';
import { silentLog } from '../devkit/temporal';
import { freshSqlitePath } from '../devkit/tempFiles';
import { openLockService } from '../locks/openLockService';
import { tracingFromEnv, tracingConfigured } from '../temporal/tracing';
import { createLockwardenWorker, WORKFLOWS_PATH } from '../worker/createWorker';
import { sessionFixture, unique } from './support/temporalFixture';
import { waitFor } from './support/waitFor';

// One contended acquisition as one trace, in a real trace store (Jaeger v2, built from the Go module
// proxy), found the way the docs say: by the session's id. The waiter's wait links to the release in
// the holder's trace that woke it.
const SERVICE = 'lockwarden-tracing-test';

const tag = (span: JaegerSpan, key: string) => span.tags.find((t) => t.key === key)?.value;
// The spans of one name, in the order they started (Jaeger answers them in no order).
const named = (trace: JaegerTrace, name: string) =>
  trace.spans.filter((s) => s.operationName === name).sort((a, b) => a.startTime - b.startTime);

describe('tracing', () => {
  it('is off unless the OTEL_* variables ask for it', () => {
    expect(tracingConfigured({})).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBe(true);
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracingConfigured({ ...on, OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingConfigured({ ...on, OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracingFromEnv({}, SERVICE)).toBeNull();
  });

  describe('a contended acquisition', () => {
    const fixture = sessionFixture();
    let jaeger: Jaeger;
    beforeAll(async () => {
      jaeger = await Jaeger.start();
    }, 600_000);
    afterAll(() => jaeger?.stop());

    it('is one trace, found by its session id, whose wait links to the release that woke it', async () => {
      const tracing = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint }, SERVICE)!;
      const { env } = fixture;
      // The caller's client and the activities' own (whose wake-up signals carry the release's trace).
      const client = new Client({ connection: env.connection, plugins: [tracing.plugin] });
      const locks = await openLockService(`sqlite:${freshSqlitePath()}`);
      const taskQueue = unique('traced');
      const worker = await createLockwardenWorker({
        connection: env.nativeConnection,
        namespace: 'default',
        taskQueue,
        plugins: [tracing.plugin],
        workflows: { workflowsPath: WORKFLOWS_PATH },
        deps: { locks, log: silentLog, waker: createSessionWaker(client, silentLog) },
      });
      const key = unique('traced-key');
      let waiterId = '';
      let holderId = '';
      await worker.runUntil(async () => {
        const holder = await acquire(client, { key, requester: 'holder', ttlMs: 3_000 }, { taskQueue });
        holderId = holder.session.workflowId;
        const waiting = acquire(client, { key, requester: 'waiter', ttlMs: 3_000 }, { taskQueue });
        waiterId = acquisitionWorkflowId(key, 'waiter');
        await waitFor('the waiter parked', async () => (await stateOf(client, waiterId)).phase === 'queued');
        // Held past a renewal (every third of the 3 s TTL), then released: the waiter is woken.
        await delay(1_500);
        await release(client, holder.lease);
        const held = await waiting;
        await delay(1_500);
        await release(client, held.lease);
        await holder.session.result();
        await held.session.result();
      });
      await tracing.shutdown();
      await locks.close();

      // The docs' query: the traces with a span tagged with the session's id.
      let traces: JaegerTrace[] = [];
      await waitFor('the trace in Jaeger', async () => {
        traces = await jaeger.tracesTagged(SERVICE, 'lockwarden.session_id', waiterId);
        return traces.length > 0 && named(traces[0]!, 'RunWorkflow:acquireLock').length > 0;
      });
      expect(traces).toHaveLength(1);
      const trace = traces[0]!;
      // The client's call is its root; the session's workflow runs under it.
      const root = trace.spans.filter((s) => s.references.every((r) => r.refType !== 'CHILD_OF'));
      expect(root.map((s) => s.operationName)).toEqual(['lockwarden.acquire']);
      expect(named(trace, 'RunWorkflow:acquireLock')).toHaveLength(1);
      // Each attempt, with its lock call: denied first (the holder has the key), granted after the wake.
      const attempts = named(trace, 'lockwarden.attempt');
      expect(attempts.map((s) => tag(s, 'lockwarden.outcome'))).toEqual(['HELD', 'granted']);
      const calls = named(trace, 'lock.tryAcquire');
      expect(calls.map((s) => tag(s, 'lockwarden.outcome'))).toEqual(['HELD', 'granted']);
      for (const call of calls) {
        expect(tag(call, 'lockwarden.backend')).toBe('sqlite');
        expect(tag(call, 'lockwarden.requester')).toBe('waiter');
        expect(typeof tag(call, 'lockwarden.service_ms')).toBe('number');
      }
      // The decision after the denial: who answered, what, and how the session applied it.
      const [decide] = named(trace, 'lockwarden.decide');
      expect(tag(decide!, 'lockwarden.provider')).toBe('policy');
      expect(tag(decide!, 'lockwarden.applied_as')).toBeDefined();
      // The park, ended by the release's wake-up, linked to it in the holder's trace.
      const [wait] = named(trace, 'lockwarden.wait');
      expect(tag(wait!, 'lockwarden.wait')).toBe('park');
      expect(tag(wait!, 'lockwarden.ended_by')).toBe('wake-up');
      const link = wait!.references.find((r) => r.refType === 'FOLLOWS_FROM');
      expect(link).toBeDefined();
      expect(link!.traceID).not.toBe(trace.traceID);
      const holderTrace = await jaeger.trace(link!.traceID);
      expect(holderTrace.spans.some((s) => s.spanID === link!.spanID)).toBe(true);
      expect(named(holderTrace, 'lock.release').map((s) => tag(s, 'lockwarden.holder'))).toContain('holder');
      expect(holderTrace.spans.some((s) => tag(s, 'lockwarden.session_id') === holderId)).toBe(true);
      // The keeper renewed the waiter's lease while it held, and the release ended it.
      expect(named(trace, 'lock.renew').map((s) => tag(s, 'lockwarden.outcome'))).toContain('renewed');
      expect(named(trace, 'lock.release').map((s) => tag(s, 'lockwarden.outcome'))).toEqual(['released']);
    }, 120_000);
  });
});
