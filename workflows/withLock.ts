import {
  ApplicationFailure,
  CancellationScope,
  condition,
  patched,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { AcquireRequestInput } from '../policy/acquireRequest';
import { acquisitionWorkflowId } from '../policy/constants';
import { FAILURE_TYPES } from '../policy/errors';
import type { Lease } from '../policy/lockSchemas';
import type { SessionNews } from '../policy/session';
import { lockSessionUpdate, requestRelease } from '../temporal/messages';
import { acquireLock } from './acquireLock';
import { WITHLOCK_STOPS_ON_LOSS } from './patches';

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
  const sessionId = acquisitionWorkflowId(request.key, request.requester);
  const answers: SessionNews[] = [];
  listenTo(sessionId, answers);
  const owner = request.owner ?? workflowInfo().workflowId;
  const session = await startChild(acquireLock, {
    workflowId: sessionId,
    ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
    args: [{ ...request, owner, notifyParent: true }],
    staticSummary: `acquire ${request.key} for ${request.requester} (for ${workflowInfo().workflowType})`,
  });
  // The session tells of the lease, or of its end, before it completes; one that fails instead (a bad
  // request, a termination) ends this wait with its failure, so withLock never waits on a dead child.
  const result = session.result();
  result.catch(() => undefined); // handled below; a failure during `fn` must not go unobserved meanwhile
  await Promise.race([condition(() => answers.length > 0), result]);
  const first = answers[0];
  if (!first)
    throw ApplicationFailure.nonRetryable(
      `session ${sessionId} ended without a word`,
      FAILURE_TYPES.lockNotAcquired,
    );
  if (first.status === 'ended') {
    throw ApplicationFailure.nonRetryable(
      `lock ${request.key} was not acquired: ${first.outcome.status}`,
      FAILURE_TYPES.lockNotAcquired,
      first.outcome,
    );
  }
  try {
    return await untilLost(() => fn(first.lease), answers);
  } finally {
    forget(sessionId);
    // A session that lost its lease has ended on its own (and said so): there is nothing to release.
    if (!answers.some((a) => a.status === 'ended'))
      await session
        .signal(requestRelease, { key: request.key, holder: request.requester })
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
 * Runs `work` in a scope of its own that is cancelled if the session says it ended (its lease lost)
 * meanwhile: the job's activities and timers stop instead of running on unprotected, and withLock
 * then throws LeaseLost. Runs from before WITHLOCK_STOPS_ON_LOSS let `work` run to its end.
 */
async function untilLost<T>(work: () => Promise<T>, answers: readonly SessionNews[]): Promise<T> {
  if (!patched(WITHLOCK_STOPS_ON_LOSS)) return work();
  const job = new CancellationScope();
  const watch = new CancellationScope();
  const running = job.run(work);
  const lost = watch.run(() => condition(() => answers.some((a) => a.status === 'ended')));
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

// Where each of this workflow's open withLocks collects what its session says: one signal handler
// for all, so withLocks can nest. Kept on globalThis, which the SDK keeps apart for each workflow
// (module scope may be shared by the workflows of one worker context).
interface Listening {
  __lockwardenSessionNews?: Map<string, SessionNews[]>;
}

function listenTo(sessionId: string, answers: SessionNews[]): void {
  const scope = globalThis as Listening;
  const listening = (scope.__lockwardenSessionNews ??= new Map());
  listening.set(sessionId, answers);
  setHandler(lockSessionUpdate, (from, answer) => {
    listening.get(from)?.push(answer);
  });
}

function forget(sessionId: string): void {
  (globalThis as Listening).__lockwardenSessionNews?.delete(sessionId);
}

// The failure Temporal answers a signal to a workflow that has already closed.
function endedBeforeSignal(error: unknown): boolean {
  return error instanceof ApplicationFailure && error.type === 'ExternalWorkflowExecutionNotFound';
}

/** Holds a lock for `holdMs` through withLock and returns the lease it held: a job that needs the lock. */
export async function holdLockFor(request: AcquireRequestInput, holdMs: number): Promise<Lease> {
  return withLock(request, async (lease) => {
    await sleep(holdMs, { summary: `hold ${request.key} for ${holdMs} ms` });
    return lease;
  });
}
