// The lease keeper: the one activity that renews a held lease, fenced, for the whole hold.
import { setTimeout as delay } from 'node:timers/promises';
import { CancelledFailure, Context } from '@temporalio/activity';
import { firstRenewalInMs, LOCK_CALL_TIMEOUT_MS } from '../policy/decisions/leaseKeeping';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { renewFenced, type RenewalDeps, type RenewalResult } from './leaseActions';
import type { SessionEndWatch } from './sessionEndWatch';

/** How often a keeper renews. */
export interface KeepPlan {
  renewEveryMs: number;
}

/**
 * Why a keeper stopped keeping its lease: the service refused a renewal, could not be reached in
 * time, or Temporal said the keeper's session is gone.
 */
export interface KeeperEnd {
  reason: string;
  /** The service answered (it refused the renewal); false when it could not be reached in time. */
  reachable: boolean;
  /** Temporal said this keeper's run is gone (it renews nothing more: nothing holds the lease). */
  sessionGone?: true;
}

/** The shortest bound a keeper's call is given: a call needs time to be answered at all. */
const MIN_CALL_MS = 100;

/** How long a keeper waits before it calls a lock service it could not reach again. */
export const UNREACHABLE_RETRY_MS = 1_000;

/**
 * The lease keepers running in this worker process, by lease. A session's release made in this
 * process quiets the lease's keeper first: it renews nothing more (a renewal would be refused and
 * reported as a loss), and it does not complete either, but waits for the cancellation its session
 * sent: a keeper's completion landing in the workflow task that releases and ends the session would
 * fail that task and the caller's release update with it. (A keeper in another process learns of the
 * release from that cancellation, or from a refused renewal, which its session, releasing, ignores.)
 */
export class LeaseKeepers {
  private readonly running = new Map<string, () => void>();

  /** Registers a keeper of `lease`; answers the function that takes it off the list. */
  register(lease: Pick<Lease, 'key' | 'holder' | 'token'>, quiet: () => void): () => void {
    const id = leaseId(lease);
    this.running.set(id, quiet);
    return () => {
      if (this.running.get(id) === quiet) this.running.delete(id);
    };
  }

  /** Quiets the keeper of `lease` if it runs in this process. */
  quiet(lease: Pick<Lease, 'key' | 'holder' | 'token'>): void {
    this.running.get(leaseId(lease))?.();
  }

  /** How many keepers run here. */
  get size(): number {
    return this.running.size;
  }
}

const leaseId = ({ key, holder, token }: Pick<Lease, 'key' | 'holder' | 'token'>) =>
  JSON.stringify([key, holder, token]);

/**
 * What the keeper needs: the fenced renewal's dependencies, this process's keeper list, and its
 * watch on sessions that ended without releasing.
 */
interface LeaseKeeperDeps extends RenewalDeps {
  keepers: LeaseKeepers;
  sessionEnds: SessionEndWatch;
}

/**
 * The lease keeper: one activity for the whole hold that renews the lease every `renewEveryMs` with
 * the fenced renewal (the token the service issued, nothing else), while its session runs: told by
 * this process's SessionEndWatch that its run ended without releasing (terminated, timed out,
 * reset), it renews nothing more, so a lease outlives its session by about one interval. It
 * heartbeats after each renewal.
 * A hold then costs its workflow no task and no history event per renewal (a session's workflow task
 * costs milliseconds of worker CPU; a renewal here costs the lock call and a heartbeat). It returns
 * only when the lease is lost, and ends cancelled when its session releases. A keeper whose worker
 * dies or stalls falls silent: the other workers' sweep renews its lease meanwhile
 * (worker/silentLeases.ts), and after its heartbeat timeout (policy/decisions/leaseKeeping.ts) Temporal runs
 * it again on another worker, which renews at once.
 */
export async function keepLease(deps: LeaseKeeperDeps, lease: Lease, plan: KeepPlan): Promise<KeeperEnd> {
  const context = Context.current();
  const halt = new AbortController();
  const unregister = deps.keepers.register(lease, () => halt.abort('quiet'));
  const run = context.info.workflowExecution; // always set: a keeper runs for its session
  const unwatch = run
    ? deps.sessionEnds.watch(run.runId, plan.renewEveryMs, () => halt.abort('session-ended'))
    : () => undefined;
  // Temporal's answer to a heartbeat that the run is not found: its session ended (or this attempt
  // was run again elsewhere, which the orphan check tells apart).
  const onCancel = () => halt.abort(context.cancellationDetails?.notFound ? 'session-ended' : 'cancelled');
  context.cancellationSignal.addEventListener('abort', onCancel, { once: true });
  // A retried attempt (its worker died or stalled) may have lost most of the interval already; a
  // first one that started late renews when the lease is due, not an interval after its own start.
  let waitMs =
    context.info.attempt > 1 ? 0 : firstRenewalInMs(lease.leaseUntil, plan.renewEveryMs, Date.now());
  let leaseUntil = lease.leaseUntil;
  try {
    for (;;) {
      await delay(waitMs, undefined, { signal: halt.signal });
      const beat = () => context.heartbeat({ leaseUntil });
      const bound = lockCallBoundMs(plan.renewEveryMs);
      const renewed = await renewWhileReachable(deps, lease, { leaseUntil, bound, beat }, halt.signal);
      if (!renewed.ok) return { reason: renewed.reason, reachable: !('unreachable' in renewed) };
      leaseUntil = renewed.leaseUntil;
      // For Temporal's sake: its answer carries the keeper's cancellation, or says this attempt was
      // run again elsewhere (then the SDK cancels this one). The SDK sends one a minute at most.
      context.heartbeat({ leaseUntil });
      waitMs = plan.renewEveryMs;
    }
  } catch (error) {
    if (!halt.signal.aborted) throw error;
    if (halt.signal.reason === 'session-ended')
      return { reason: 'its session ended without releasing it', reachable: true, sessionGone: true };
    // Quieted by its session's release here: it waits for the session's cancellation, as above.
    if (halt.signal.reason === 'quiet') await cancelled(context, plan.renewEveryMs);
    // Cancelled by its session, or by the worker shutting down (then Temporal retries it elsewhere).
    throw new CancelledFailure(String(context.cancellationSignal.reason));
  } finally {
    unregister();
    unwatch();
    context.cancellationSignal.removeEventListener('abort', onCancel);
  }
}

// Heartbeats until the keeper's cancellation arrives (it comes in a heartbeat's answer, or as the
// answer that its session has ended); renews nothing.
async function cancelled(context: Context, everyMs: number): Promise<void> {
  for (;;) {
    context.heartbeat();
    try {
      await delay(everyMs, undefined, { signal: context.cancellationSignal });
    } catch {
      return;
    }
  }
}

// A renewal the lock service could not be reached for, or that went unanswered for
// LOCK_CALL_TIMEOUT_MS (a partitioned link hangs), is tried again while the lease may still be renewed
// in time (the deadline is the service's, read against this host's clock): past that, the lease is
// lost whatever the service would say. A renewal the keeper was quieted during reports nothing: the
// release, not a loss, is what the service answered.
async function renewWhileReachable(
  deps: RenewalDeps,
  lease: Lease,
  { leaseUntil, bound, beat }: { leaseUntil: number; bound: number; beat: () => void },
  halt: AbortSignal,
): Promise<RenewalResult | { ok: false; reason: string; unreachable: true }> {
  for (;;) {
    const leftMs = leaseUntil - Date.now();
    // Alive while it retries: a keeper silent past its heartbeat timeout is run again elsewhere.
    beat();
    try {
      // Unanswered within its bound, a call is tried again, and the bound ends a retry's length before
      // the deadline when there is room: a keeper cut off gives up while the lease still stands. One
      // that finds the deadline past on this host's clock (it was paused) asks the service all the
      // same: the service's answer, not this clock, says whether the lease is lost and to whom.
      const beforeDeadline = leftMs - UNREACHABLE_RETRY_MS;
      const callMs = beforeDeadline >= MIN_CALL_MS ? Math.min(bound, beforeDeadline) : bound;
      const result = await answeredWithin(callMs, renewFenced(deps, lease));
      halt.throwIfAborted();
      return result;
    } catch (error) {
      if (halt.aborted || !lockServiceDown(error)) throw error;
      if (Date.now() + UNREACHABLE_RETRY_MS >= leaseUntil)
        return {
          ok: false,
          reason: `the lock service could not be reached before the lease ran out (${String(error)})`,
          unreachable: true,
        };
      deps.log.warn(
        { event: 'lock.renew-unreachable', key: lease.key, error: String(error) },
        'renewal failed',
      );
      beat();
      await delay(UNREACHABLE_RETRY_MS, undefined, { signal: halt });
    }
  }
}

/**
 * How long one of a keeper's lock calls may go unanswered: LOCK_CALL_TIMEOUT_MS, and never longer
 * than its renewal interval, which its heartbeat timeout outlasts (policy/decisions/leaseKeeping.ts).
 */
export function lockCallBoundMs(renewEveryMs: number): number {
  return Math.min(LOCK_CALL_TIMEOUT_MS, renewEveryMs);
}

/**
 * `call`'s answer, or a rejection with `ranOut()` once `ms` passed without one (the call itself is
 * left to finish).
 */
export async function answeredWithin<T>(
  ms: number,
  call: Promise<T>,
  ranOut: () => Error = () => new Error(`the lock service did not answer within ${ms} ms`),
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(ranOut()), ms);
  });
  call.catch(() => undefined); // a late failure of an abandoned call is nobody's to handle
  try {
    return await Promise.race([call, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

// Bad input and a lease action the deny gate refuses are not outages: they fail the keeper.
function lockServiceDown(error: unknown): boolean {
  return !(error instanceof Error && 'nonRetryable' in error && error.nonRetryable === true);
}
