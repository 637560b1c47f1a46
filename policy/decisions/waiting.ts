// The waiting protocol's rules: when a parked waiter asks again, how long it parks, its ticket's
// span.
import type { RetryBudget } from './acquireRequest';
import type { NextStep, RetryProgress } from './guardrails';
import { boundRetryDelay } from './guardrails';
import type { Denial } from '../lockContract/lockSchemas';
import { MAX_QUEUE_TICKET_MS } from '../lockContract/lockTerms';

/** What a waiter saw at a denial: what decides whether to ask for a new decision, and rule 4's count. */
export interface WaitSituation {
  holder: string | null;
  holderLeaseUntil: number | null;
  position: number | null;
}

/** The situation a denial shows. */
export function situationOf(denial: Denial): WaitSituation {
  return { holder: denial.holder, holderLeaseUntil: denial.holderLeaseUntil, position: denial.position };
}

/**
 * Whether a waiter must ask for a new retry decision: at its first denial, when the key has a new
 * holder or none (a lease ran out), or when it lost its place or fell back in the queue. A parked
 * waiter that finds the same holder and its place asks nothing.
 */
export function needsDecision(before: WaitSituation | null, now: WaitSituation): boolean {
  if (!before) return true;
  if (now.holder !== before.holder) return true;
  if (now.position === null) return true;
  return before.position !== null && now.position > before.position;
}

/**
 * Whether nothing moved between two denials: the same holder, whose lease no one renewed, and no
 * progress in the queue. Rule 4 (escalate a wait that repeats itself) counts these, not attempts, so
 * a waiter behind a healthy holder, or in a queue that moves, pages no one before its budget says so.
 */
export function nothingMoved(before: WaitSituation | null, now: WaitSituation): boolean {
  if (!before || now.holder !== before.holder || now.holderLeaseUntil !== before.holderLeaseUntil)
    return false;
  return !(before.position !== null && now.position !== null && now.position < before.position);
}

/**
 * Whether a wake-up found the wait as it was: the same holder still holds and this waiter did not
 * move up. Such a wake-up (a release notice anyone can send) spends no retry: the waiter goes back
 * to waiting as if it had not been woken. A renewal of the same holder's lease is no change.
 */
export function wakeChangedNothing(before: WaitSituation | null, now: WaitSituation): boolean {
  if (!before || now.holder === null) return false;
  return nothingMoved(before, { ...now, holderLeaseUntil: before.holderLeaseUntil });
}

/**
 * Whether a denied waiter parks (one timer until a release wakes it) rather than backing off: it
 * holds a place in the queue, and wake-on-release is on, so a release will signal it.
 */
export function canPark(denial: Denial, wakeOnRelease: boolean): boolean {
  return wakeOnRelease && denial.position !== null;
}

// ---- Parking until told (the protocol is in docs/sessions.md) ----

/** How long a ticket outlives the moment its session would next try at the latest. */
export const TICKET_GRACE_MS = 60_000;

/**
 * The span a parked session asks its ticket to live: until it would next try of its own accord (its
 * budget's end, or, once escalated, the escalation's end), and a minute more. It never refreshes a
 * ticket on a timer, so a ticket lives as long as its session waits; a session that dies without
 * leaving is skipped by whoever wakes it, and its ticket lapses a minute after that session would
 * have given up.
 */
export function ticketSpanMs(budgetLeftMs: number, escalationTimeoutMs: number): number {
  return Math.min(MAX_QUEUE_TICKET_MS, Math.max(budgetLeftMs, escalationTimeoutMs, 0) + TICKET_GRACE_MS);
}

/**
 * How long a parked waiter sleeps unless woken: until what is left of its budget runs out, head of
 * the queue or not. No waiter watches the holder's lease: the holder's session tells the head when it
 * releases or loses the lease, and a lease that ends with no session to tell (a holder terminated,
 * or one outside lockwarden) is found by the queue sweep (see stalledHeads).
 */
export function parkUntilTold(progress: RetryProgress, budget: RetryBudget): NextStep {
  return boundRetryDelay(Number.MAX_SAFE_INTEGER, progress, {
    ...budget,
    maxBackoffMs: Number.MAX_SAFE_INTEGER,
  });
}

/**
 * A parked waiter's timer when a model gave a delay: the model's (jittered, bounded) delay when it
 * is shorter than the wake-up expected, the holder's lease running out (a holder that renews, or
 * one behind which others queue, wakes this waiter later still; a holder unknown to the denial sets
 * no expectation); otherwise the park until told. Seed 000's retry_after_ms is the model's to give,
 * so a wake-up that will come later does not silently drop it; a policy delay always gives way.
 */
export function parkStepFor(
  untilTold: NextStep,
  modelDelayMs: number | null,
  holderLeaseRemainingMs: number | null,
): NextStep & { parkEndsAtDelay?: boolean } {
  if (untilTold.kind !== 'sleep' || modelDelayMs === null) return untilTold;
  const expectedWakeMs = holderLeaseRemainingMs ?? Number.POSITIVE_INFINITY;
  if (modelDelayMs >= expectedWakeMs || modelDelayMs >= untilTold.sleepMs) return untilTold;
  return { ...untilTold, sleepMs: modelDelayMs, parkEndsAtDelay: true };
}
