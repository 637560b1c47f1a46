// The events an incident's timeline is built from, each on its own clock.
import type { DeadlockFacts } from '../sessionModel/sessionTypes';
import type { WaitForEdge } from '../lockContract/waitForGraph';

/** Whose clock an event's time is on: the lock service's (grants, writes) or Temporal's (history). */
export type EventClock = 'service' | 'temporal';

/** What every event of a key's incident log carries. */
interface EventBase {
  /** Milliseconds since the epoch, on `clock`. */
  at: number;
  clock: EventClock;
  /** The requester (session) it concerns; for a fenced write, the holder its token was granted to. */
  session: string;
  /**
   * For an event on the service's clock read from a session's history: the time Temporal recorded
   * the answer that carried it. The pairs measure how far Temporal's clock is from the service's.
   */
  temporalAt?: number;
}

/** One typed event of a key's incident log: read from sessions' histories, the escalation store and fenced writes. */
export type IncidentEvent = EventBase &
  (
    | { kind: 'requested' }
    | { kind: 'denied'; holder: string | null }
    | { kind: 'granted'; token: string; leaseUntil: number }
    | { kind: 'kept-alive'; token: string; leaseUntil: number }
    | { kind: 'keep-alive-refused'; token: string; reason: string }
    | { kind: 'let-go'; token: string }
    | { kind: 'let-go-refused'; token: string; reason: string }
    | { kind: 'escalated'; reason: string; deadlock: boolean; cycle?: WaitForEdge[] }
    | { kind: 'operator-answered'; action: string; operator: string }
    | { kind: 'escalation-resolved' }
    | { kind: 'deadlock-found'; cycle: WaitForEdge[]; escalator: string }
    | { kind: 'ended'; status: string; reason: string | null; deadlock?: DeadlockFacts }
    | { kind: 'write-accepted'; token: string; resource: string }
    | { kind: 'write-refused'; token: string; newestToken: string; resource: string }
  );

export type IncidentEventKind = IncidentEvent['kind'];
