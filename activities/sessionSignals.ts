// Reaching sessions from the worker: waking a waiter, telling of a deadlock or an overtaking,
// asking who holds.
import { type Client, QueryNotRegisteredError, WorkflowNotFoundError } from '@temporalio/client';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { LockService } from '../locks/lockService';
import { acquisitionWorkflowId } from '../policy/constants';
import type { Overtaking } from '../policy/lockContract/fairness';
import { fairnessViolated, lockReleased, type ReleaseNotice, sessionState } from '../temporal/messages';
import { visibilityLiteral } from '../temporal/visibility';

/**
 * Reaches sessions through the worker's own Temporal client. It wakes a waiting session from an
 * activity (a release reaches the head of the queue in one hop, with no workflow task of the
 * releasing session between the lock service's answer and the signal), and tells the sweep whether
 * a lease's holder is a session that still holds it.
 */
export interface SessionWaker {
  /**
   * Wakes the session of (key, requester); `notice` says when a release freed the key. Answers
   * 'gone' when no session of that requester runs (it ended, or was terminated, and left its ticket
   * behind), 'woken' otherwise: a failure to reach Temporal is logged, and the ticket is kept. A
   * release's wake-up (with `notice`) is sent again after WAKE_RETRY_PAUSES_MS first.
   */
  wake(key: string, requester: string, notice?: ReleaseNotice): Promise<'woken' | 'gone'>;
  /**
   * True when the session of (key, holder) is proven to hold the lease of `token`: a running
   * `acquireLock` workflow whose own answer to the state query says it holds that token. Not a search
   * attribute, which any client may set on any workflow. A session that ended, was terminated, never
   * ran (the holder lives outside lockwarden), or is another workflow under its id, does not hold.
   */
  holds(key: string, holder: string, token: string): Promise<boolean>;
  /**
   * How many sessions of `key` other than `exceptWorkflowId` escalated at or after `since`, on any
   * worker (Temporal's visibility, which lags writes a little); null when visibility cannot say.
   */
  escalationsOf(key: string, since: Date, exceptWorkflowId: string): Promise<number | null>;
  /** Tells the overtaken waiter's session that a later arrival stands ahead of it; a gone one is logged. */
  tellOvertaken(overtaking: Overtaking): Promise<void>;
  /**
   * The runs of `acquireLock` sessions that closed abnormally (terminated, timed out, failed) since
   * `since`, from Temporal's visibility; null when it cannot say now. See SessionEndWatch.
   */
  closedSessionRuns(since: Date): Promise<string[] | null>;
  /**
   * Whether a run of the session of (key, requester) is running now (its id's latest run), or null
   * when Temporal cannot say.
   */
  sessionRuns(key: string, requester: string): Promise<boolean | null>;
}

/** How long the sweep waits for a session's answer to the state query. */
const HOLDS_QUERY_MS = 3_000;

/**
 * gRPC's status codes for a call that got no answer in time: DEADLINE_EXCEEDED, or CANCELLED when the
 * client's deadline cancels the call first (both are seen for a query no worker answers).
 */
const UNANSWERED = [1, 4];

// The client wraps the gRPC error in a ServiceError whose cause carries the code.
function isUnanswered(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | null; e; e = e.cause as typeof e)
    if (UNANSWERED.includes(e.code as number)) return true;
  return false;
}

/** The workflow type of acquisition sessions, as Temporal lists it. */
const ACQUIRE_WORKFLOW_TYPE = 'acquireLock';

// The token a session's state answer says it holds, or null (any other answer, or not holding).
function heldToken(state: unknown): string | null {
  if (typeof state !== 'object' || state === null) return null;
  const { phase, lease } = state as { phase?: unknown; lease?: { token?: unknown } | null };
  return phase === 'holding' && typeof lease?.token === 'string' ? lease.token : null;
}

/**
 * The pauses before a wake-up is sent again once the client's own retries (about 6 s) have failed:
 * a history host that died takes longer than those to hand its shards over, and a wake-up lost there
 * would leave the head parked until the sweep's second look at its queue.
 */
export const WAKE_RETRY_PAUSES_MS: readonly number[] = [2_000, 4_000];

/**
 * Sends `signal` until it is delivered, the session is found gone, or `pausesMs` are spent; throws
 * the last error then.
 */
export async function signalPatiently(
  signal: () => Promise<void>,
  pausesMs: readonly number[] = WAKE_RETRY_PAUSES_MS,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await signal();
    } catch (error) {
      const pause = pausesMs[attempt];
      if (error instanceof WorkflowNotFoundError || pause === undefined) throw error;
      await delay(pause);
    }
  }
}

/** A waker that signals `lockReleased` to the session of (key, requester). */
export function createSessionWaker(client: Client, log: Logger): SessionWaker {
  return {
    async wake(key, requester, notice) {
      try {
        const session = client.workflow.getHandle(acquisitionWorkflowId(key, requester));
        // A release's wake-up (with its notice) is the one hop a hand-off rides on, so it is sent
        // again; the sweep's own wake-ups are sent once, for the sweep must not stall on them while
        // Temporal is away (silent leases wait behind them), and its next pass tries again.
        await signalPatiently(
          () => (notice ? session.signal(lockReleased, notice) : session.signal(lockReleased)),
          notice ? WAKE_RETRY_PAUSES_MS : [],
        );
        return 'woken';
      } catch (error) {
        const gone = error instanceof WorkflowNotFoundError;
        log.info(
          { event: 'lock.wake-missed', key, requester, gone, error: String(error) },
          gone ? 'no running session to wake' : 'could not wake the session',
        );
        return gone ? 'gone' : 'woken';
      }
    },
    async escalationsOf(key, since, exceptWorkflowId) {
      const [k, self] = [visibilityLiteral(key), visibilityLiteral(exceptWorkflowId)];
      if (!k || !self) return null;
      const query =
        `WorkflowType = 'acquireLock' AND LockKey = ${k} AND ` +
        `LockEscalatedAt >= '${since.toISOString()}' AND WorkflowId != ${self}`;
      try {
        return (await client.workflow.count(query)).count;
      } catch (error) {
        log.warn(
          { event: 'lock.escalation-count-failed', key, error: String(error) },
          'could not count escalations',
        );
        return null;
      }
    },
    async tellOvertaken(overtaking) {
      try {
        const session = client.workflow.getHandle(acquisitionWorkflowId(overtaking.key, overtaking.waiter));
        await session.signal(fairnessViolated, overtaking);
      } catch (error) {
        log.info(
          {
            event: 'lock.fairness-untold',
            key: overtaking.key,
            requester: overtaking.waiter,
            error: String(error),
          },
          'could not tell an overtaken waiter',
        );
      }
    },
    async closedSessionRuns(since) {
      const query =
        `WorkflowType = '${ACQUIRE_WORKFLOW_TYPE}' AND ExecutionStatus IN ('Terminated', 'TimedOut', 'Failed') ` +
        `AND CloseTime >= '${since.toISOString()}'`;
      try {
        const runs: string[] = [];
        for await (const run of client.workflow.list({ query })) runs.push(run.runId);
        return runs;
      } catch (error) {
        log.warn(
          { event: 'lock.session-ends-unread', error: String(error) },
          'could not list ended sessions',
        );
        return null;
      }
    },
    async sessionRuns(key, requester) {
      try {
        const described = await client.workflow.getHandle(acquisitionWorkflowId(key, requester)).describe();
        return described.status.name === 'RUNNING';
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return false;
        return null;
      }
    },
    async holds(key, holder, token) {
      const handle = client.workflow.getHandle(acquisitionWorkflowId(key, holder));
      try {
        const session = await handle.describe();
        if (session.status.name !== 'RUNNING' || session.type !== ACQUIRE_WORKFLOW_TYPE) return false;
        // A session no worker can answer for is not proven: its lease runs out.
        const state: unknown = await client.withDeadline(Date.now() + HOLDS_QUERY_MS, () =>
          handle.query(sessionState),
        );
        return heldToken(state) === token;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError || error instanceof QueryNotRegisteredError) return false;
        if (isUnanswered(error)) return false;
        throw error;
      }
    },
  };
}

/** What waking a key's queue needs: the lock service (to drop a gone waiter), the waker, a logger. */
export interface QueueWakeDeps {
  locks: LockService;
  waker: SessionWaker;
  log: Logger;
}

/**
 * Wakes the first of `waiters` (the key's queue, in order) whose session still runs. A waiter whose
 * session is gone (terminated, or ended without leaving the queue) is taken out of the queue, so the
 * hand-off goes on to the next one instead of waiting for the dead waiter's ticket to lapse.
 */
export async function wakeFirstLiving(
  { locks, waker, log }: QueueWakeDeps,
  key: string,
  waiters: string[],
  notice?: ReleaseNotice,
): Promise<'woken' | 'none-left'> {
  for (const requester of waiters) {
    if ((await waker.wake(key, requester, notice)) === 'woken') return 'woken';
    await locks.leave({ key, requester });
    log.info({ event: 'lock.skip-gone-waiter', key, requester }, 'took a gone session out of the queue');
  }
  return 'none-left';
}
