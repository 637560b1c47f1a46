// withLock and holdLockFor: a lock held around a job, from inside the caller's own workflow.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  log,
  proxyActivities,
  sleep,
  startChild,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AcquireRequestInput } from '../policy/decisions/acquireRequest';
import { acquisitionWorkflowId } from '../policy/constants';
import { FAILURE_TYPES } from '../policy/errors';
import { DEFAULT_MAX_HOLD_MS } from '../policy/decisions/holdLimits';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { RELEASE_KEY_MEMO, releaseKeyDigest } from '../policy/lockContract/releaseKey';
import type { SessionNews, SessionOutcome } from '../policy/sessionModel/sessionTypes';
import { requestRelease } from '../temporal/messages';
import { endedBeforeSignal, forget, listenTo } from './sessionNews';
import { acquireLock } from './acquireLock';

/** Where withLock's session runs. */
export interface WithLockOptions {
  /**
   * The task queue of the workers that run lockwarden's sessions: by default the calling workflow's
   * own (a worker with the lockwarden plugin), else the queue of a separate lockwarden worker.
   */
  taskQueue?: string;
}

/**
 * Runs `fn` while holding a lock, from inside another workflow: starts the acquisition session as a
 * child, hands `fn` the lease (pass its token to your activities and their FencedResource), and
 * releases after `fn` returns or throws. Throws LockNotAcquired if the session ends without the
 * lease, and LeaseLost if the lease was lost while `fn` ran. The session's owner, in the wait-for
 * graph, is this workflow unless the request names another: a withLock inside another's `fn` waits
 * while this workflow holds, and a lock inversion between two such workflows is a deadlock found.
 */
export async function withLock<T>(
  request: AcquireRequestInput,
  fn: (lease: Lease) => Promise<T>,
  options: WithLockOptions = {},
): Promise<T> {
  // The session checks the request in full; its id needs the two names first.
  if (typeof request?.key !== 'string' || typeof request.requester !== 'string')
    throw ApplicationFailure.nonRetryable(
      'invalid acquisition request: key and requester must be strings',
      FAILURE_TYPES.invalidLockRequest,
    );
  const sessionId = acquisitionWorkflowId(request.key, request.requester);
  const answers: SessionNews[] = [];
  listenTo(sessionId, answers);
  const owner = request.owner ?? workflowInfo().workflowId;
  // The release capability, made here and kept in this run: the session's history gets its digest.
  const releaseKey = uuid4();
  const session = await startChild(acquireLock, {
    workflowId: sessionId,
    ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
    args: [{ ...request, owner, notifyParent: true }],
    memo: { [RELEASE_KEY_MEMO]: releaseKeyDigest(releaseKey) },
    staticSummary: `acquire ${request.key} for ${request.requester} (for ${workflowInfo().workflowType})`,
  });
  // The session's end, as the server reports it: no other workflow can forge it.
  let sessionEnded = false;
  const result = session.result();
  result.then(
    () => (sessionEnded = true),
    () => (sessionEnded = true),
  ); // a failure during `fn` must not go unobserved meanwhile; it is thrown below
  const lease = await provenLease(request, answers, result, options);
  try {
    return await untilEnded(
      () => fn(lease),
      () => sessionEnded,
    );
  } finally {
    forget(sessionId);
    // A session that lost its lease has ended on its own: there is nothing to release.
    if (!sessionEnded)
      await session
        .signal(requestRelease, { key: request.key, holder: request.requester }, releaseKey)
        .catch((error: unknown) => {
          // It ended between our check and the signal: its result says how.
          if (!endedBeforeSignal(error)) throw error;
        });
    const outcome = await result;
    if (outcome.status === 'lease-lost') {
      // Work done after the loss ran unprotected; fenced writes with this token were refused.
      throw ApplicationFailure.nonRetryable(
        `lease on ${request.key} was lost while held: ${outcome.reason}`,
        FAILURE_TYPES.leaseLost,
        outcome,
      );
    }
  }
}

/**
 * The lease `fn` runs with, proven: a notice that the session holds is a claim any client of the
 * namespace can send, so the lease is read from the lock service (the session's own holder and the
 * notice's token, live there) and its token and deadline are the service's. A notice the service does
 * not bear out is refused and the wait goes on; the session's end (its result) ends the wait.
 */
async function provenLease(
  request: AcquireRequestInput,
  answers: readonly SessionNews[],
  result: Promise<SessionOutcome>,
  options: WithLockOptions,
): Promise<Lease> {
  const { leaseHeldBy } = proxyActivities<Activities>({
    ...LEASE_CHECK_OPTIONS,
    ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
  });
  for (let read = 0; ; read++) {
    const ended = await Promise.race([condition(() => answers.length > read).then(() => null), result]);
    if (ended) throw endedWithoutJob(request.key, ended);
    const news = answers[read]!;
    if (news.status !== 'acquired') continue; // the session's end comes as its result
    // The check stops if the session ends meanwhile (a lock service out of reach may hold it up).
    const proving = new CancellationScope();
    const checking = proving.run(() =>
      leaseHeldBy.executeWithOptions({ summary: `check the lease of ${request.requester}` }, [
        request.key,
        request.requester,
      ]),
    );
    const first = await Promise.race([checking.then((live) => ({ live })), result.then((end) => ({ end }))]);
    if ('end' in first) {
      proving.cancel();
      checking.catch(() => undefined); // cancelled on purpose
      throw endedWithoutJob(request.key, first.end);
    }
    const { live } = first;
    const claimed = typeof news.lease === 'object' && news.lease !== null ? news.lease.token : undefined;
    if (live && live.token === claimed) return { ...news.lease, ...live };
    log.warn('refused a lease notice the lock service does not bear out', {
      key: request.key,
      requester: request.requester,
      serviceHolds: live !== null,
    });
  }
}

const LEASE_CHECK_OPTIONS = {
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
} as const;

// A session that ended before the job ran: it lost the lease it held (LeaseLost), or never held one.
function endedWithoutJob(key: string, outcome: SessionOutcome): ApplicationFailure {
  if (outcome.status !== 'lease-lost') return notAcquired(key, outcome);
  return ApplicationFailure.nonRetryable(
    `lease on ${key} was lost before the job ran: ${outcome.reason}`,
    FAILURE_TYPES.leaseLost,
    outcome,
  );
}

function notAcquired(key: string, outcome: SessionOutcome): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `lock ${key} was not acquired: ${outcome.status}`,
    FAILURE_TYPES.lockNotAcquired,
    outcome,
  );
}

/**
 * Runs `work` in a scope of its own that is cancelled if the session ends meanwhile (it ends while
 * holding only when its lease was lost, or it was stopped): the job's activities (cancelled through
 * their heartbeats) and timers stop instead of running on unprotected, and withLock then throws.
 */
async function untilEnded<T>(work: () => Promise<T>, ended: () => boolean): Promise<T> {
  const job = new CancellationScope();
  const watch = new CancellationScope();
  const running = job.run(work);
  const lost = watch.run(() => condition(ended));
  lost.then(
    () => job.cancel(),
    () => undefined, // the watch is cancelled when the job is done
  );
  try {
    return await running;
  } finally {
    watch.cancel();
  }
}

/** How much longer than its hold holdLockFor's hold limit is: the time to acquire and to release. */
const HOLD_MARGIN_MS = 60_000;

/** Holds a lock for `holdMs` through withLock and returns the lease it held: a job that needs the lock. */
export async function holdLockFor(request: AcquireRequestInput, holdMs: number): Promise<Lease> {
  if (!Number.isSafeInteger(holdMs) || holdMs < 0 || holdMs > 86_400_000)
    throw ApplicationFailure.nonRetryable(
      'invalid hold: holdMs must be a whole number of ms from 0 to 86400000',
      FAILURE_TYPES.invalidLockRequest,
    );
  // The hold limit covers the hold asked for, unless the request sets its own.
  const limited = { maxHoldMs: Math.max(DEFAULT_MAX_HOLD_MS, holdMs + HOLD_MARGIN_MS), ...request };
  return withLock(limited, async (lease) => {
    await sleep(holdMs, { summary: `hold ${request.key} for ${holdMs} ms` });
    return lease;
  });
}
