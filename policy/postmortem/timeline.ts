// An incident's timeline: its events ordered, and the mechanism they show.
import { leaseVocabulary } from '../textSafety/leaseVocabulary';
import { compareTokens } from '../lockContract/tokens';
import { describeCycle, type WaitForEdge, waitingRequester } from '../lockContract/waitForGraph';
import type { EventClock, IncidentEvent, IncidentEventKind } from './incidentEvents';

/** The mechanism an incident's events show, or none. */
export type Mechanism =
  | { kind: 'paused-past-lease'; stale: Thread; staleToken: string; next: Thread; nextToken: string }
  | { kind: 'lock-inversion'; cycle: WaitForEdge[]; escalator: string | null }
  | { kind: 'starvation'; escalations: number }
  | { kind: 'none' };

/** A session at the heart of the incident, named as the briefing names it. */
export interface Thread {
  label: string;
  session: string;
}

/** One step of the timeline, in order. */
export interface TimelineStep {
  kind: IncidentEventKind;
  thread: string;
  at: number;
  clock: EventClock;
  /** Milliseconds after the first step. */
  offsetMs: number;
  text: string;
  /** A session that ended having lost its hold: a loss, which a briefing always keeps. */
  lost?: true;
}

/** What the fenced writes left on one resource: the writes accepted and those refused, by thread. */
interface ResourceWrites {
  resource: string;
  accepted: { session: string; token: string }[];
  refused: { session: string; token: string; newestToken: string }[];
}

/** What happened on a key, as a deterministic Thread A / Thread B timeline. */
export interface Timeline {
  key: string;
  /** When the first event happened, on the lock service's clock. */
  startedAt: number | null;
  /**
   * Every time is on the lock service's clock: Temporal's were shifted by `offsetMs` (Temporal's
   * clock minus the service's, the median of `samples` answers seen on both), or left as they were
   * when no answer carried both (null).
   */
  clock?: { offsetMs: number; samples: number } | null;
  /**
   * Per fenced resource: what exists and what was refused (the business impact, verified). This and
   * `clock` are absent from timelines built before them, which briefings recorded in histories hold.
   */
  writes?: ResourceWrites[];
  threads: Thread[];
  steps: TimelineStep[];
  mechanism: Mechanism;
  counts: { sessions: number; escalations: number; refusedWrites: number; lostHolds: number };
}

const LABELS = 'ABCDEFGH';
// Events at the same time keep a causal order: a grant before its writes, a refusal before the end.
const KIND_ORDER: IncidentEventKind[] = [
  'requested',
  'denied',
  'deadlock-found',
  'escalated',
  'operator-answered',
  'granted',
  'escalation-resolved',
  'kept-alive',
  'write-accepted',
  'write-refused',
  'keep-alive-refused',
  'let-go',
  'let-go-refused',
  'ended',
];

/**
 * Builds the timeline of a key's incident from its events. Pure and deterministic: the same events
 * give the same timeline. Finds the mechanism first, which decides who Thread A and Thread B are.
 */
export function buildTimeline(key: string, events: readonly IncidentEvent[]): Timeline {
  const clock = clockOffset(events);
  const onServiceClock = events.map((e) =>
    e.clock === 'temporal' && clock ? { ...e, at: e.at - clock.offsetMs } : e,
  );
  const ordered = [...onServiceClock].sort(
    (a, b) => a.at - b.at || KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind),
  );
  const sessions = [...new Set(ordered.map((e) => e.session))];
  const { mechanism, heart } = findMechanism(ordered);
  const threads = heart.map((session, i) => ({ label: `Thread ${LABELS[i] ?? String(i + 1)}`, session }));
  const labelOf = new Map(threads.map((t) => [t.session, t.label]));
  const startedAt = ordered[0]?.at ?? null;
  const steps = describeSteps(
    ordered.filter((e) => labelOf.has(e.session)),
    labelOf,
    startedAt ?? 0,
  );
  return {
    key,
    startedAt,
    clock,
    writes: writesOf(ordered),
    threads,
    steps,
    mechanism: withThreads(mechanism, threads),
    counts: {
      sessions: sessions.length,
      escalations: ordered.filter((e) => e.kind === 'escalated').length,
      refusedWrites: ordered.filter((e) => e.kind === 'write-refused').length,
      lostHolds: ordered.filter((e) => e.kind === 'ended' && e.status === 'lease-lost').length,
    },
  };
}

type Found = { mechanism: Mechanism; heart: string[] };

// The mechanism, and the sessions at its heart in the order they are named (A, B, ...).
function findMechanism(events: IncidentEvent[]): Found {
  const lost = events.find(
    (e) => e.kind === 'keep-alive-refused' || (e.kind === 'ended' && e.status === 'lease-lost'),
  );
  if (lost) {
    const staleGrant = [...events]
      .reverse()
      .find((e) => e.kind === 'granted' && e.session === lost.session && e.at <= lost.at);
    const staleToken = staleGrant?.kind === 'granted' ? staleGrant.token : null;
    const next = staleToken
      ? events.find(
          (e) => e.kind === 'granted' && e.session !== lost.session && compareTokens(e.token, staleToken) > 0,
        )
      : undefined;
    if (staleToken && next?.kind === 'granted') {
      const placeholder = { label: '', session: '' };
      return {
        mechanism: {
          kind: 'paused-past-lease',
          stale: { ...placeholder, session: lost.session },
          staleToken,
          next: { ...placeholder, session: next.session },
          nextToken: next.token,
        },
        heart: [lost.session, next.session],
      };
    }
  }
  const deadlock = deadlockOf(events);
  if (deadlock) {
    // The threads are the cycle's waiters, named in a fixed order (by requester).
    const heart = [...new Set(deadlock.cycle.map((e) => e.waiter))].sort();
    return { mechanism: { kind: 'lock-inversion', ...deadlock }, heart };
  }
  const escalations = events.filter((e) => e.kind === 'escalated');
  if (escalations.length >= 3) {
    const bySession = new Map<string, number>();
    for (const e of escalations) bySession.set(e.session, (bySession.get(e.session) ?? 0) + 1);
    const starved = [...bySession.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]![0];
    const lastDenial = [...events].reverse().find((e) => e.kind === 'denied' && e.session === starved);
    const holder = lastDenial?.kind === 'denied' ? lastDenial.holder : null;
    return {
      mechanism: { kind: 'starvation', escalations: escalations.length },
      heart: holder && holder !== starved ? [starved, holder] : [starved],
    };
  }
  const granted = [...new Set(events.filter((e) => e.kind === 'granted').map((e) => e.session))];
  return { mechanism: { kind: 'none' }, heart: granted.slice(0, 2) };
}

// The wait-for cycle the events tell of, as the sessions recorded it: a deadlock notice, an
// escalation for a deadlock, or a session halted by one; null when there is none. The escalator is
// known from a notice or a halted session's outcome.
function deadlockOf(events: IncidentEvent[]): { cycle: WaitForEdge[]; escalator: string | null } | null {
  let found: WaitForEdge[] | null = null;
  let escalator: string | null = null;
  for (const e of events) {
    const cycle =
      e.kind === 'deadlock-found'
        ? e.cycle
        : e.kind === 'escalated'
          ? e.cycle
          : e.kind === 'ended'
            ? e.deadlock?.cycle
            : undefined;
    if (!found && cycle?.length) found = cycle;
    if (!escalator && e.kind === 'deadlock-found') escalator = e.escalator;
    if (!escalator && e.kind === 'ended' && e.deadlock) escalator = e.deadlock.escalator;
    // The escalator pages on-call with the cycle itself and is told of it by no one: on the key it
    // waits for, its own escalation is the only record of who escalated. The cycle names owners: the
    // escalator is the member whose waiting session this is.
    if (!escalator && e.kind === 'escalated' && e.cycle?.length)
      escalator = e.cycle.find((edge) => waitingRequester(edge) === e.session)?.waiter ?? e.session;
  }
  return found ? { cycle: found, escalator } : null;
}

function withThreads(mechanism: Mechanism, threads: Thread[]): Mechanism {
  if (mechanism.kind !== 'paused-past-lease') return mechanism;
  const find = (session: string) => threads.find((t) => t.session === session)!;
  return { ...mechanism, stale: find(mechanism.stale.session), next: find(mechanism.next.session) };
}

const seconds = (ms: number) => `+${(ms / 1000).toFixed(3)} s`;

// One line per event; runs of denials and of keep-alives by one thread are told once, with a count.
function describeSteps(events: IncidentEvent[], labelOf: Map<string, string>, t0: number): TimelineStep[] {
  const steps: TimelineStep[] = [];
  let run: { step: TimelineStep; count: number; event: IncidentEvent } | null = null;
  for (const event of events) {
    const thread = labelOf.get(event.session)!;
    const repeats =
      run &&
      run.step.thread === thread &&
      run.event.kind === event.kind &&
      (event.kind === 'denied' || event.kind === 'kept-alive');
    if (repeats && run) {
      run.count++;
      run.step.text = describe(event, thread, t0, run.count);
      continue;
    }
    const step: TimelineStep = {
      kind: event.kind,
      thread,
      at: event.at,
      clock: event.clock,
      offsetMs: event.at - t0,
      text: describe(event, thread, t0, 1),
      ...(event.kind === 'ended' && event.status === 'lease-lost' ? { lost: true as const } : {}),
    };
    steps.push(step);
    run = { step, count: 1, event };
  }
  return steps;
}

function describe(e: IncidentEvent, thread: string, t0: number, count: number): string {
  const who = `${thread} (${e.session})`;
  const times = count > 1 ? ` (${count} times)` : '';
  switch (e.kind) {
    case 'requested':
      return `${who} asks for the lock`;
    case 'denied':
      return `${who} is told to wait behind ${e.holder ?? 'nobody (the queue)'}${times}`;
    case 'granted':
      return `${who} takes token ${e.token}, its lease running to ${seconds(e.leaseUntil - t0)}`;
    case 'kept-alive':
      return `${who} keeps its hold on token ${e.token}${times}, lease now to ${seconds(e.leaseUntil - t0)}`;
    case 'keep-alive-refused':
      return `${who} tries to keep token ${e.token}: refused${because(e.reason)}`;
    case 'let-go':
      return `${who} lets go of token ${e.token}`;
    case 'let-go-refused':
      return `${who} tries to let go of token ${e.token}: refused${because(e.reason)}`;
    case 'escalated':
      return `${who} pages on-call${because(e.reason, ': ')}`;
    case 'operator-answered':
      return `${who} gets the operator's answer: ${e.action} (${e.operator})`;
    case 'escalation-resolved':
      return `${who} takes the lock after a wake-up; its escalation resolves itself`;
    case 'deadlock-found':
      return `${who} is told of a cycle of waits: ${describeCycle(e.cycle)}; ${e.escalator} escalates it`;
    case 'ended':
      return `${who} ${ENDINGS[e.status] ?? 'ends'}${e.reason ? because(e.reason, ': ') : ''}`;
    case 'write-accepted':
      return `${who} writes to ${e.resource} with token ${e.token}: accepted`;
    case 'write-refused':
      return `${who} writes to ${e.resource} with token ${e.token}: refused, the newest accepted is token ${e.newestToken}`;
  }
}

// How a session's end reads: in the words of taking, keeping and letting go, which the draft gate
// admits (a status such as "released" would send every real incident's draft back to the template).
const ENDINGS: Record<string, string> = {
  released: 'ends by letting go',
  'lease-lost': 'ends having lost its hold',
  abandoned: 'ends by giving up',
  halted: 'ends halted',
};

// A reason from another system (the lock service, a model, an operator), or nothing when it speaks
// of a lease action: the step's own words then say what happened.
function because(reason: string, separator = ', '): string {
  return leaseVocabulary(reason) ? '' : `${separator}${reason}`;
}

/**
 * How far Temporal's clock is from the lock service's, from the answers whose service time and
 * Temporal's record of them are both known (the median, so one slow answer does not move it).
 */
function clockOffset(events: readonly IncidentEvent[]): Timeline['clock'] {
  const gaps = events
    .flatMap((e) => (e.clock === 'service' && e.temporalAt !== undefined ? [e.temporalAt - e.at] : []))
    .sort((a, b) => a - b);
  if (!gaps.length) return null;
  const mid = Math.floor(gaps.length / 2);
  const median = gaps.length % 2 ? gaps[mid]! : (gaps[mid - 1]! + gaps[mid]!) / 2;
  return { offsetMs: Math.round(median), samples: gaps.length };
}

// The fenced writes per resource, in order: what exists, and what the token check refused.
function writesOf(events: IncidentEvent[]): ResourceWrites[] {
  const byResource = new Map<string, ResourceWrites>();
  for (const e of events) {
    if (e.kind !== 'write-accepted' && e.kind !== 'write-refused') continue;
    let entry = byResource.get(e.resource);
    if (!entry) byResource.set(e.resource, (entry = { resource: e.resource, accepted: [], refused: [] }));
    if (e.kind === 'write-accepted') entry.accepted.push({ session: e.session, token: e.token });
    else entry.refused.push({ session: e.session, token: e.token, newestToken: e.newestToken });
  }
  return [...byResource.values()];
}
