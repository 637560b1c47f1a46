// A key's incident log for a post-mortem: its sessions' histories read back as events.
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { EscalationNotice, EscalationStore } from '../activities/escalationStore';
import type { FencedWriteAttempt } from '../locks/fencedResource';
import { lockKeySchema, parseOrThrow } from '../policy/lockContract/lockSchemas';
import type { IncidentEvent } from '../policy/postmortem/incidentEvents';
import type { DeadlockFacts, DeadlockNotice } from '../policy/sessionModel/sessionTypes';
import { deadlockFound, resolveEscalation } from '../temporal/messages';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

/** Where a key's incident log is read from, and the window. */
interface IncidentLogSource {
  client: Client;
  key: string;
  since?: Date;
  until?: Date;
  /** The escalation store: its records of sessions whose histories are gone are added. */
  escalations?: EscalationStore;
  /** Fenced write attempts on the resources the key guards (from FencedResource.attempts). */
  writes?: FencedWriteAttempt[];
}

/** A visibility query string literal. */
const quoted = (value: string) => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * Reads the incident log of one key: its sessions found by the LockKey search attribute (every run,
 * continued runs included), their histories turned into typed events, plus the escalation store's
 * records of sessions no longer in Temporal and the fenced write attempts, on one time line.
 */
export async function readIncidentLog(source: IncidentLogSource): Promise<IncidentEvent[]> {
  const key = parseOrThrow(lockKeySchema, source.key, 'post-mortem key');
  const clauses = [`${SEARCH_ATTRIBUTES.lockKey.name} = ${quoted(key)}`, `WorkflowType = "acquireLock"`];
  if (source.since) clauses.push(`StartTime >= ${quoted(source.since.toISOString())}`);
  if (source.until) clauses.push(`StartTime <= ${quoted(source.until.toISOString())}`);
  const events: IncidentEvent[] = [];
  const seen = new Set<string>();
  for await (const execution of source.client.workflow.list({ query: clauses.join(' AND ') })) {
    seen.add(execution.workflowId);
    const history = await source.client.workflow
      .getHandle(execution.workflowId, execution.runId)
      .fetchHistory();
    events.push(...sessionEvents(history.events ?? []));
  }
  for (const record of (await source.escalations?.recordsOf(key)) ?? []) {
    if (seen.has(record.workflowId)) continue; // the history already told it
    const at = new Date(record.at).getTime();
    const base = { at, clock: 'temporal' as const, session: record.requester };
    events.push(
      'resolution' in record
        ? { ...base, kind: 'escalation-resolved' }
        : {
            ...base,
            kind: 'escalated',
            reason: record.reason,
            deadlock: record.deadlock,
            ...(record.cycle ? { cycle: record.cycle } : {}),
          },
    );
  }
  events.push(...writeEvents(source.writes ?? [], events));
  return events;
}

/** The typed events of one session run's history. Exported for tests of the mapping. */
function sessionEvents(history: HistoryEvent[]): IncidentEvent[] {
  const events: IncidentEvent[] = [];
  const started = history[0]?.workflowExecutionStartedEventAttributes;
  const request = first(started?.input) as
    { requester?: string; resume?: { lease?: { token: string } | null } } | undefined;
  const session = request?.requester ?? 'unknown';
  const scheduled = new Map<string, { type: string; input: unknown }>();
  // A continued run holds the lease its previous run took.
  let token: string | null = request?.resume?.lease?.token ?? null;
  const add = (event: IncidentEvent) => events.push(event);

  for (const e of history) {
    const at = eventTime(e);
    const temporalBase = { at, clock: 'temporal' as const, session };
    if (e.workflowExecutionStartedEventAttributes && !request?.resume)
      add({ ...temporalBase, kind: 'requested' });
    const sched = e.activityTaskScheduledEventAttributes;
    if (sched)
      scheduled.set(String(e.eventId), { type: sched.activityType?.name ?? '', input: first(sched.input) });
    const done = e.activityTaskCompletedEventAttributes;
    if (done) {
      const call = scheduled.get(String(done.scheduledEventId));
      if (call) activityEvent(call.type, call.input, first(done.result), temporalBase);
    }
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity') {
      const meta = first(marker.details?.data) as { activity_type?: string } | undefined;
      activityEvent(meta?.activity_type ?? '', undefined, first(marker.details?.result), temporalBase);
    }
    const signal = e.workflowExecutionSignaledEventAttributes;
    if (signal?.signalName === deadlockFound.name) {
      const notice = first(signal.input) as Partial<DeadlockNotice> | undefined;
      add({
        ...temporalBase,
        kind: 'deadlock-found',
        cycle: notice?.edges ?? [],
        escalator: notice?.escalator ?? '?',
      });
    }
    const accepted = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    if (accepted?.name === resolveEscalation.name) {
      const answer = first(accepted.args) as { action?: string; operator?: string } | undefined;
      add({
        ...temporalBase,
        kind: 'operator-answered',
        action: answer?.action ?? '?',
        operator: answer?.operator ?? '?',
      });
    }
    const completed = e.workflowExecutionCompletedEventAttributes;
    if (completed) {
      const outcome = first(completed.result) as
        { status?: string; reason?: string; deadlock?: DeadlockFacts } | undefined;
      add({
        ...temporalBase,
        kind: 'ended',
        status: outcome?.status ?? 'unknown',
        reason: outcome?.reason ?? null,
        ...(outcome?.deadlock ? { deadlock: outcome.deadlock } : {}),
      });
    }
  }
  return events;

  function activityEvent(
    type: string,
    input: unknown,
    result: unknown,
    base: { at: number; clock: 'temporal'; session: string },
  ) {
    const r = result as Record<string, unknown> | undefined;
    if (!r) return;
    switch (type) {
      case 'checkRequestAndTryAcquire': {
        // A fresh session's first attempt, made with its request's check (null: none was made).
        if (r.attempt) activityEvent('tryAcquireLock', input, r.attempt, base);
        return;
      }
      case 'tryAcquireLock': {
        const lease = r.lease as { token: string; grantedAt: number; leaseUntil: number } | undefined;
        const denial = r.denial as { holder: string | null; serviceTime: number } | undefined;
        if (r.granted && lease) {
          token = lease.token;
          add({
            at: lease.grantedAt,
            clock: 'service',
            temporalAt: base.at,
            session,
            kind: 'granted',
            token: lease.token,
            leaseUntil: lease.leaseUntil,
          });
        } else if (denial)
          add({
            at: denial.serviceTime,
            clock: 'service',
            temporalAt: base.at,
            session,
            kind: 'denied',
            holder: denial.holder,
          });
        return;
      }
      case 'renewLease': {
        // 0.1.0's sessions renewed from the workflow, one activity a renewal; their histories still read.
        const renewed = (input as { token?: string } | undefined)?.token ?? token ?? '?';
        if (r.ok) add({ ...base, kind: 'kept-alive', token: renewed, leaseUntil: Number(r.leaseUntil) });
        else add({ ...base, kind: 'keep-alive-refused', token: renewed, reason: String(r.reason) });
        return;
      }
      case 'keepLease': {
        // A keeper completes only when the lease is lost (a release cancels it): its renewal was refused.
        const kept = (input as { token?: string } | undefined)?.token ?? token ?? '?';
        add({ ...base, kind: 'keep-alive-refused', token: kept, reason: String(r.reason) });
        return;
      }
      case 'releaseLock': // the activity's name in 0.1.0's histories
      case 'releaseFencedLease': {
        const at = typeof r.serviceTime === 'number' ? r.serviceTime : base.at;
        const clock = typeof r.serviceTime === 'number' ? ('service' as const) : base.clock;
        const pair = clock === 'service' ? { temporalAt: base.at } : {};
        if (r.ok) add({ at, clock, ...pair, session, kind: 'let-go', token: token ?? '?' });
        else
          add({
            at,
            clock,
            ...pair,
            session,
            kind: 'let-go-refused',
            token: token ?? '?',
            reason: String(r.reason),
          });
        return;
      }
      case 'notifyOnCall': {
        const notice = input as Partial<EscalationNotice> | undefined;
        add({
          ...base,
          kind: 'escalated',
          reason: notice?.reason ?? '',
          deadlock: notice?.deadlock ?? false,
          ...(notice?.cycle ? { cycle: notice.cycle } : {}),
        });
        return;
      }
      case 'notifyEscalationResolved':
        add({ ...base, kind: 'escalation-resolved' });
        return;
    }
  }
}

// Fenced writes, each put on the session its token was granted to.
function writeEvents(writes: FencedWriteAttempt[], events: IncidentEvent[]): IncidentEvent[] {
  const holderOf = new Map(
    events.flatMap((e) => (e.kind === 'granted' ? [[e.token, e.session] as const] : [])),
  );
  return writes.map((w) => {
    const base = {
      at: w.at,
      clock: 'service' as const,
      session: holderOf.get(w.token) ?? `holder of token ${w.token}`,
    };
    return w.accepted
      ? { ...base, kind: 'write-accepted', token: w.token, resource: w.resource }
      : { ...base, kind: 'write-refused', token: w.token, newestToken: w.newestToken, resource: w.resource };
  });
}

function eventTime(e: HistoryEvent): number {
  const t = e.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;
}

// The first payload of a list, decoded (lockwarden's payloads are JSON).
function first(payloads: Payloads): unknown {
  const payload = payloads?.payloads?.[0];
  if (!payload?.data) return undefined;
  try {
    return JSON.parse(Buffer.from(payload.data).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
