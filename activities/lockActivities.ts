// The lock service's activities: the fast path, the fenced release, leaving the queue, reading
// holdings and waits.
import type { Logger } from 'pino';
import type { LockService } from '../locks/lockService';
import { CompleteAsyncError, Context } from '@temporalio/activity';
import {
  answeredWithin,
  type KeepPlan,
  type KeeperEnd,
  keepLease,
  LeaseKeepers,
  lockCallBoundMs,
} from './leaseKeeper';
import { gateLeaseAction, logLeaseAction } from './leaseActions';
import { SessionEndWatch } from './sessionEndWatch';
import type { Metrics } from './metrics';
import type { ReleaseNotice } from '../temporal/messages';
import { type SessionWaker, wakeFirstLiving } from './sessionSignals';
import { edgesAround, type WaitForEdge, waitForEdges } from '../policy/lockContract/waitForGraph';
import { describeOvertaking, overtakings, type QueuedTicket } from '../policy/lockContract/fairness';
import type { LockRecord } from '../locks/lockService';
import { type LockStatus, toLockStatus } from '../policy/lockContract/keyStatus';
import { nonRetryableOnBadInput } from '../temporal/failures';
import type {
  AcquireAttempt,
  FencedActionResult,
  FencedTarget,
  Lease,
  TryAcquireRequest,
  WaiterRef,
} from '../policy/lockContract/lockSchemas';

/**
 * Who releases: the holding session itself (its lease keeper, if in this process, is quieted first),
 * or an operator's fenced release (the keeper's next renewal finds the lease gone and ends the hold).
 */
export type ReleasedBy = 'session' | 'operator';

/** A fast-path answer with the wait-for edges around a denial, for the session's deadlock check. */
export type SessionAttempt = AcquireAttempt & { waitForEdges?: WaitForEdge[] };

/** A live lease as the lock service shows it: (key, holder, token) and its deadline on the service's clock. */
export type LiveLease = Pick<Lease, 'key' | 'holder' | 'token' | 'leaseUntil'>;

/** The holder a session saw at its last denial, so the fast path can skip an unchanged wait-for read. */
export interface SeenHolder {
  holder: string | null;
}

/** What the lock activities need: the lock service, a structured logger, and a way to wake sessions. */
export interface LockActivityDeps {
  locks: LockService;
  log: Logger;
  /** Wakes the head of a key's queue after a release; see {@link SessionWaker}. */
  waker: SessionWaker;
  /** Counts renewals and lost leases; absent, nothing is counted. */
  metrics?: Metrics;
  /** This process's lease keepers (see keepLease); absent, the activities keep a list of their own. */
  keepers?: LeaseKeepers;
}

/**
 * The activities that talk to the lock service. They are the only path by which a lease is granted,
 * renewed or released, and they never see model text.
 */
export function createLockActivities({
  locks,
  log,
  waker,
  metrics,
  keepers = new LeaseKeepers(),
}: LockActivityDeps) {
  const sessionEnds = new SessionEndWatch((since) => waker.closedSessionRuns(since));
  return {
    /**
     * One fast-path attempt at the lock service. A denial of a request with an owner also reports the
     * wait-for edges around that owner, unless the caller `seen` the same holder at its last denial
     * (nothing that could close a cycle changed). A request without one is never part of a cycle.
     */
    tryAcquireLock: (request: TryAcquireRequest, seen?: SeenHolder) => tryAcquireLock(request, seen),

    /**
     * Keeps a held lease renewed until it is lost or released (see activities/leaseKeeper.ts). A lease lost
     * with the key left free wakes the head of its queue: nobody else would tell it.
     */
    async keepLease(lease: Lease, plan: KeepPlan): Promise<KeeperEnd> {
      const end = await keepLease({ locks, log, metrics, keepers, sessionEnds }, lease, plan);
      if (end.sessionGone) {
        await letGoOfOrphan(lease);
        return end;
      }
      // A keeper cut off from the service tells its session at once: it gave up a retry's length
      // before the deadline, so the session ends while the lease still stands. Otherwise it looks,
      // bounded within its heartbeat timeout, whether the key was left free with a queue to wake.
      if (!end.reachable) return end;
      Context.current().heartbeat();
      const inspecting = locks.inspect(lease.key);
      const after = await answeredWithin(lockCallBoundMs(plan.renewEveryMs), inspecting).catch(() => null);
      if (after && after.holder === null && after.waiters.length) {
        await tellOvertaken(after);
        await wakeHead(lease.key, after.waiters);
      }
      return end;
    },

    /**
     * The activity a hold keeps for a holder outside a workflow: started here and left open (completed
     * asynchronously, so it takes no slot of this worker), it is kept alive by the holder's own
     * keep-alives (heartbeats by its activity id, policy/decisions/holdLimits.ts), and times out when they
     * stop: its session then lets the lease go. It is never completed; its session ends it.
     */
    async awaitHolderKeepAlives(_lease: Pick<Lease, 'key' | 'holder' | 'token'>): Promise<void> {
      throw new CompleteAsyncError();
    },

    /**
     * The live lease the lock service holds for `holder` on `key` now, or null: how a workflow checks
     * a message that claims a lease (withLock's notice) before it
     * uses one. The token and deadline returned are the service's, never the message's.
     */
    async leaseHeldBy(key: string, holder: string): Promise<LiveLease | null> {
      const record = await nonRetryableOnBadInput(() => locks.inspect(key));
      if (record.holder !== holder || record.token === null || record.leaseUntil === null) return null;
      if (record.leaseUntil <= record.serviceTime) return null;
      return { key, holder, token: record.token, leaseUntil: record.leaseUntil };
    },

    /**
     * The wait-for edges around `owner`, read from the lock service's holdings and tickets now: what
     * a session told of a deadlock checks the notice against before it acts on it.
     */
    async waitForEdgesAround(owner: string): Promise<WaitForEdge[]> {
      const [holdings, waits] = await Promise.all([locks.holdings(), locks.waits()]);
      return edgesAround(owner, waitForEdges(holdings, waits));
    },

    /**
     * The key's holder and queue as the lock service shows them now: what a waiter told it was
     * overtaken checks the notice against before it escalates.
     */
    async queueOf(key: string): Promise<{ holder: string | null; queue: QueuedTicket[] }> {
      const record = await nonRetryableOnBadInput(() => locks.inspect(key));
      return {
        holder: record.holder,
        queue: record.queue.map(({ requester, priority, since }) => ({ requester, priority, since })),
      };
    },

    /** A key's holder, token, lease time left and queue, read on the lock service's clock (lockctl status). */
    async inspectLock(key: string): Promise<LockStatus> {
      const inspected = await nonRetryableOnBadInput(() => locks.inspect(key));
      return toLockStatus(inspected, locks.backend);
    },

    /** Gives up the session's place in the key's queue, so a session that stops waiting blocks no one. */
    async leaveQueue(waiter: WaiterRef): Promise<void> {
      const before = await nonRetryableOnBadInput(() => locks.inspect(waiter.key));
      await locks.leave(waiter);
      // The head left a free key (woken, it gave up instead of taking it): the next one is told now.
      // Behind a holder, the holder's release or loss tells whoever is head then.
      if (before.waiters[0] === waiter.requester && before.holder === null)
        await wakeHead(waiter.key, before.waiters.slice(1));
      log.info(
        { event: 'lock.leave-queue', backend: locks.backend, key: waiter.key, requester: waiter.requester },
        'left the queue',
      );
    },

    /**
     * Owner-only, fenced release of a lease the service issued. A release that went through wakes
     * the head of the key's queue from here, so the hand-off costs one signal.
     */
    async releaseFencedLease(
      lease: Pick<Lease, 'key' | 'holder' | 'token'>,
      by: ReleasedBy = 'operator',
      reason?: string,
    ): Promise<FencedActionResult> {
      gateLeaseAction('release', lease.token);
      // The session's own keeper renews nothing more; an operator's release leaves it to find the loss.
      if (by === 'session') keepers.quiet(lease);
      const target: FencedTarget = { key: lease.key, holder: lease.holder, token: lease.token };
      const result = await nonRetryableOnBadInput(() => locks.release(target));
      if (by === 'session' && (await releasedBefore(target, result))) {
        // This release ran before, in a workflow task the server then refused (a signal arrived as
        // the session completed): the key is free at the newest token, ours, so it was our release.
        log.info({ event: 'lock.release-repeated', key: lease.key, token: lease.token }, 'released already');
        return { ok: true, serviceTime: result.serviceTime };
      }
      logLeaseAction(log, locks.backend, 'release', lease, result);
      if (by === 'operator') {
        // Taking a lease from its holder is an operator's act: said so, with why, and counted.
        log.warn(
          { event: 'lock.force-release', key: lease.key, holder: lease.holder, ok: result.ok, reason },
          'an operator took a lease away from its holder',
        );
        metrics?.forceReleases.inc({ result: result.ok ? 'ok' : 'refused' });
      }
      if (!result.ok && by === 'session') metrics?.leasesLost.inc({ at: 'release' });
      if (result.ok) await handOn(lease.key, result.serviceTime);
      return result;
    },
  };

  /**
   * Whether a release refused as not-holder was this lease's own, made before: the key has no holder
   * and the service's newest token for it is this lease's (only a fenced release by that token frees
   * a key and leaves it so; an expiry leaves the holder in place, or the key forgotten).
   */
  async function releasedBefore(target: FencedTarget, result: FencedActionResult): Promise<boolean> {
    if (result.ok || result.reason !== 'not-holder') return false;
    const record = await locks.inspect(target.key);
    return record.holder === null && record.lastToken === target.token;
  }

  // After a release, the key goes to the head of its queue: a waiter a later arrival overtook is told
  // first (the fairness monitor), then the head is woken.
  async function handOn(key: string, releasedAt: number): Promise<void> {
    const after = await locks.inspect(key);
    await tellOvertaken(after);
    await wakeHead(key, after.waiters, { releasedAt });
  }

  /**
   * The keeper's session is gone (terminated, timed out, or reset) while it held: when no run of the
   * session runs now, nothing will ever release the lease, so the keeper releases it, fenced by its
   * token, and hands the key on at once. A session that runs again (a reset's new run, which takes the
   * same lease back or queues for it) keeps what it has: the lease is left to it, or to its TTL.
   */
  async function letGoOfOrphan(lease: Lease): Promise<void> {
    if ((await waker.sessionRuns(lease.key, lease.holder)) !== false) return;
    gateLeaseAction('release', lease.token);
    const result = await locks.release({ key: lease.key, holder: lease.holder, token: lease.token });
    log.warn(
      {
        event: 'lock.release-orphaned',
        key: lease.key,
        holder: lease.holder,
        token: lease.token,
        ok: result.ok,
      },
      'released the lease of a session that ended without releasing it',
    );
    metrics?.orphanedReleases.inc({ result: result.ok ? 'ok' : 'refused' });
    if (result.ok) await handOn(lease.key, result.serviceTime);
  }

  async function tryAcquireLock(request: TryAcquireRequest, seen?: SeenHolder): Promise<SessionAttempt> {
    const attempt = await nonRetryableOnBadInput(() => locks.tryAcquire(request));
    log.info(
      {
        event: 'lock.try-acquire',
        backend: locks.backend,
        key: request.key,
        requester: request.requester,
        granted: attempt.granted,
        code: attempt.granted ? undefined : attempt.denial.code,
      },
      attempt.granted ? 'lease granted' : 'lease denied',
    );
    if (attempt.granted) return attempt;
    const denied = attempt.denial;
    // A free lock this requester may not take yet: make sure the head of the queue knows. When
    // every waiter ahead of it turns out to be gone, it is the head now: it tries again at once.
    if (denied.code === 'QUEUED') {
      const record = await locks.inspect(request.key);
      const mine = record.waiters.indexOf(request.requester);
      const ahead = mine < 0 ? record.waiters.slice(0, 1) : record.waiters.slice(0, mine);
      if (ahead.length && (await wakeHead(request.key, ahead)) === 'none-left' && mine >= 0)
        return tryAcquireLock(request, seen);
    }
    const { owner } = request;
    if (!owner || (seen && seen.holder === denied.holder)) return attempt;
    const [holdings, waits] = await Promise.all([locks.holdings(), locks.waits()]);
    // Only the edges around the owner: the session records what this answers, at every attempt.
    return { ...attempt, waitForEdges: edgesAround(owner, waitForEdges(holdings, waits)) };
  }

  // The fairness monitor, run as the key changes hands with the queue just read: each waiter a later
  // arrival stands ahead of is told (it escalates), before the head is woken.
  async function tellOvertaken(record: LockRecord): Promise<void> {
    for (const overtaking of overtakings(record.key, record.queue)) {
      log.warn({ event: 'lock.fairness-violation', ...overtaking }, describeOvertaking(overtaking));
      metrics?.fairnessViolations.inc();
      await waker.tellOvertaken(overtaking);
    }
  }

  // Wakes the first waiter of the key whose session still runs (see wakeFirstLiving).
  function wakeHead(key: string, waiters: string[], notice?: ReleaseNotice) {
    return wakeFirstLiving({ locks, waker, log }, key, waiters, notice);
  }
}
