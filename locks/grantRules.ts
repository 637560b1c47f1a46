// The grant rules every backend applies alike: who may take a free key, how tickets are ordered.
import type { QueuedWaiter, StalledQueue } from './lockService';
import {
  type AcquireAttempt,
  denial,
  type DenialCode,
  type FencedActionResult,
  type FencedTarget,
  type Lease,
  type ParsedTryAcquireRequest,
  type Wait,
} from '../policy/lockContract/lockSchemas';

/** A waiter's queue ticket as a backend stores it. `seq` orders arrivals; `expiresAt` is service time. */
export interface Ticket {
  requester: string;
  priority: number;
  seq: number;
  expiresAt: number;
  /** When the waiter first took its place (service time); null where a backend did not record it. */
  since?: number | null;
  /** The thread of control that waits (tryAcquire's `owner`); null or absent: the requester alone. */
  owner?: string | null;
}

/** The waiters as `inspect()` reports them, from live tickets already in queue order. */
export function waitersOf(tickets: Ticket[]): { waiters: string[]; queue: QueuedWaiter[] } {
  return {
    waiters: tickets.map((t) => t.requester),
    queue: tickets.map((t) => ({
      requester: t.requester,
      priority: t.priority,
      since: t.since ?? null,
      expiresAt: Number.isFinite(t.expiresAt) ? t.expiresAt : null,
    })),
  };
}

/** What a backend read about a key inside its transaction, all on the service clock. */
interface KeySnapshot {
  now: number;
  holder: string | null;
  leaseUntil: number | null;
  tickets: Ticket[];
  /** Most live tickets the key's queue takes: a newcomer beyond them is denied QUEUE_FULL, no ticket. */
  maxWaiters: number;
}

/** What the backend must do with a tryAcquire, decided from a snapshot. */
type GrantStep =
  | { kind: 'return-existing' }
  | { kind: 'grant' }
  | { kind: 'deny'; code: DenialCode; keepTicket: boolean; waiters: number; position: number | null };

/** Orders tickets: higher priority first, then earlier arrival. */
export function queueOrder(a: Pick<Ticket, 'priority' | 'seq'>, b: Pick<Ticket, 'priority' | 'seq'>): number {
  return b.priority - a.priority || a.seq - b.seq;
}

/**
 * The one set of grant rules every transactional backend applies (Redis runs the same rules in Lua).
 * A live lease is returned to its own holder unchanged (a retried request must not mint a second
 * token) and denied to anyone else. A free lock goes to the head of the live queue, or to anyone when
 * the queue is empty or the requester waives fairness. A denied requester under FIFO or
 * priority-based fairness keeps (or takes) a ticket, so a latecomer cannot jump ahead of it,
 * unless the queue already has `maxWaiters` live tickets: then it is denied QUEUE_FULL and takes none.
 */
export function decideGrant(snapshot: KeySnapshot, request: ParsedTryAcquireRequest): GrantStep {
  const live = snapshot.tickets.filter((t) => t.expiresAt > snapshot.now);
  const leaseLive =
    snapshot.holder !== null && snapshot.leaseUntil !== null && snapshot.leaseUntil > snapshot.now;
  if (leaseLive && snapshot.holder === request.requester) return { kind: 'return-existing' };

  const queued = request.fairness !== 'no-starvation-guarantee';
  const others = live.filter((t) => t.requester !== request.requester);
  if (!leaseLive && (!queued || others.length === 0)) return { kind: 'grant' };

  const mine = live.find((t) => t.requester === request.requester);
  if (!leaseLive && mine) {
    const ahead = others.filter((t) => queueOrder(t, mine) < 0).length;
    if (ahead === 0) return { kind: 'grant' };
  }
  if (queued && !mine && others.length >= snapshot.maxWaiters)
    return { kind: 'deny', code: 'QUEUE_FULL', keepTicket: false, waiters: others.length, position: null };
  const position = queued ? positionOf(others, mine, request.priority) : null;
  return {
    kind: 'deny',
    code: leaseLive ? 'HELD' : 'QUEUED',
    keepTicket: queued,
    waiters: others.length,
    position,
  };
}

/**
 * Whether `step` would engage the requester on this key afresh: a grant, or a first ticket, to one
 * that had no live ticket here. Only such a step is held to the requester's limit, so a waiter
 * already queued, or a holder asking again, is never refused by it.
 */
export function engagesAfresh(step: GrantStep, hadTicket: boolean): boolean {
  return !hadTicket && (step.kind === 'grant' || (step.kind === 'deny' && step.keepTicket));
}

/**
 * `step`, unless the requester already holds or waits for `max` other keys (`engagedElsewhere`, read
 * by the backend for a step that engagesAfresh): then denied REQUESTER_LIMIT, with no ticket.
 */
export function withinRequesterLimit(step: GrantStep, engagedElsewhere: number, max: number): GrantStep {
  if (engagedElsewhere < max) return step;
  const waiters = step.kind === 'deny' ? step.waiters : 0;
  return { kind: 'deny', code: 'REQUESTER_LIMIT', keepTicket: false, waiters, position: null };
}

// Where the requester stands: its ticket's place, or the place a new ticket would take (last of its priority).
function positionOf(others: Ticket[], mine: Ticket | undefined, priority: number): number {
  const me = mine ?? { priority, seq: Number.POSITIVE_INFINITY };
  return others.filter((t) => queueOrder(t, me) < 0).length + 1;
}

/** The lease a backend just granted, with the token it issued, on its clock `now`. */
export function grantedAttempt(request: ParsedTryAcquireRequest, token: string, now: number): AcquireAttempt {
  const lease: Lease = {
    key: request.key,
    holder: request.requester,
    token,
    leaseUntil: now + request.ttlMs,
    grantedAt: now,
  };
  return { granted: true, lease };
}

/** The denial a backend answers for a `deny` step, naming the live holder (null when none) it read. */
export function deniedAttempt(
  step: Extract<GrantStep, { kind: 'deny' }>,
  now: number,
  liveHolder: { holder: string; leaseUntil: number } | null,
): AcquireAttempt {
  return {
    granted: false,
    denial: denial(step.code, {
      holder: liveHolder?.holder ?? null,
      holderLeaseUntil: liveHolder?.leaseUntil ?? null,
      waiters: step.waiters,
      position: step.position,
      serviceTime: now,
    }),
  };
}

/**
 * Why a fenced action on (holder, token) is refused, or null when it may proceed. A backend that
 * enforces expiry itself (etcd deletes an expired lease) passes an infinite `leaseUntil`.
 */
export function ownerRefusal(
  holder: string | null,
  token: string | null,
  leaseUntil: number | null,
  target: FencedTarget,
  now: number,
): Extract<FencedActionResult, { ok: false }> | null {
  if (holder === null || holder !== target.holder)
    return { ok: false, reason: 'not-holder', serviceTime: now };
  if (token !== target.token) return { ok: false, reason: 'stale-token', serviceTime: now };
  if (leaseUntil === null || leaseUntil <= now) return { ok: false, reason: 'expired', serviceTime: now };
  return null;
}

/** Numbers each key's live tickets in queue order. */
export function positionsByKey(tickets: (Ticket & { key: string })[]): Wait[] {
  const byKey = new Map<string, Ticket[]>();
  for (const t of tickets) byKey.set(t.key, [...(byKey.get(t.key) ?? []), t]);
  return [...byKey].flatMap(([key, list]) =>
    list
      .sort(queueOrder)
      .map((t, i) => ({ key, requester: t.requester, position: i + 1, owner: t.owner ?? null })),
  );
}

/** Groups the tickets of stalled keys into queues, each head first. */
export function stalledQueuesOf(
  tickets: (Pick<Ticket, 'requester' | 'priority' | 'seq'> & { key: string })[],
): StalledQueue[] {
  const byKey = new Map<string, typeof tickets>();
  for (const ticket of tickets) byKey.set(ticket.key, [...(byKey.get(ticket.key) ?? []), ticket]);
  return [...byKey].map(([key, queue]) => ({
    key,
    waiters: [...queue].sort(queueOrder).map((t) => t.requester),
  }));
}
