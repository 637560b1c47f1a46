// The worker's sweep: wakes stalled queues and stands in for keepers that fell silent.
import { setTimeout as delay } from 'node:timers/promises';
import type { WorkerPlugin } from '@temporalio/worker';
import { type QueueWakeDeps, wakeFirstLiving } from '../activities/sessionSignals';
import type { Metrics } from '../activities/metrics';
import { DEFAULT_QUEUE_SWEEP_MS, MAX_QUEUE_SWEEP_MS } from '../policy/constants';
import {
  type LapsingLease,
  NOTHING_SEEN,
  type SweepMemory,
  queuesToWake,
  UNRESPONSIVE_HEAD_MS,
} from '../policy/lockContract/stalledQueues';
import { renewSilentLeases } from './silentLeases';

/** What a sweep needs: what waking a queue needs, where renewals are counted, and how often to look. */
interface QueueSweepOptions extends QueueWakeDeps {
  metrics?: Metrics;
  /** At most MAX_QUEUE_SWEEP_MS: sessions count on that for their silent leases. */
  everyMs?: number;
  /** How long a woken head may leave a free key untried before it is taken out (UNRESPONSIVE_HEAD_MS). */
  unresponsiveHeadMs?: number;
}

/** The sweep's interval, checked: a slower sweep would let a silent lease run out. */
export function sweepIntervalMs(everyMs: number = DEFAULT_QUEUE_SWEEP_MS): number {
  if (!Number.isInteger(everyMs) || everyMs < 1 || everyMs > MAX_QUEUE_SWEEP_MS)
    throw new RangeError(
      `queue sweep interval must be a whole number of ms from 1 to ${MAX_QUEUE_SWEEP_MS}, got ${everyMs}`,
    );
  return everyMs;
}

/**
 * The queue sweep, every `everyMs`, three lock-service calls:
 *
 * - the leases whose keepers fell silent (`leasesRunningLow`), renewed for the sessions that still
 *   hold them (worker/silentLeases.ts): a holder's worker that died costs no lease;
 * - the keys that nobody holds while their queues wait (`stalledQueues`), and a wake-up for the head
 *   of each one seen so at two sweeps in a row, or at once behind a lease the sweep saw running out
 *   with no session to keep it (policy/lockContract/stalledQueues.ts). It is what tells a parked head
 *   that a lease ended when no session is left to tell it: the holder's session was terminated or
 *   timed out, the holder lives outside lockwarden, or the head woken by a release died before it
 *   tried. A head woken so for UNRESPONSIVE_HEAD_MS that never tried is taken out of the queue;
 * - the records of keys idle past the lock service's retention and of lapsed tickets
 *   (`forgetIdleKeys`), so storage and the two reads above follow the keys in use, not every key
 *   ever used.
 *
 * Parked waiters watch nothing themselves and keepers heartbeat rarely, so this is the one periodic
 * cost of waiting, and it does not grow with the waiters. Runs until `signal` aborts; a failed sweep
 * is logged and the next one goes on.
 */
async function sweepQueues(options: QueueSweepOptions, signal: AbortSignal): Promise<void> {
  const everyMs = sweepIntervalMs(options.everyMs);
  const unresponsiveHeadMs = options.unresponsiveHeadMs ?? UNRESPONSIVE_HEAD_MS;
  const pace = {
    everyMs,
    unresponsiveHeadMs,
    unresponsiveAfterSweeps: Math.ceil(unresponsiveHeadMs / everyMs),
  };
  let previous = NOTHING_SEEN;
  while (!signal.aborted) {
    try {
      await delay(everyMs, undefined, { signal });
    } catch {
      return; // aborted: the worker is shutting down
    }
    const endTimer = options.metrics?.sweepDuration.startTimer();
    previous = await sweepOnce(options, pace, previous);
    endTimer?.();
  }
}

/** One sweep; each part that fails is logged and the others go on. Answers what it saw, for the next. */
async function sweepOnce(
  options: QueueSweepOptions,
  pace: { everyMs: number; unresponsiveHeadMs: number; unresponsiveAfterSweeps: number },
  previous: SweepMemory,
): Promise<SweepMemory> {
  const { locks, log } = options;
  const { everyMs, unresponsiveHeadMs, unresponsiveAfterSweeps } = pace;
  let seen = previous;
  let lapsing: LapsingLease[] = [];
  try {
    ({ lapsing } = await renewSilentLeases(options, everyMs));
  } catch (error) {
    log.warn(
      { event: 'lock.sweep-failed', part: 'silent leases', error: String(error) },
      'renewing silent leases failed; the next sweep goes on',
    );
  }
  try {
    const verdict = queuesToWake(previous, await locks.stalledQueues(), lapsing, unresponsiveAfterSweeps);
    seen = verdict.seen;
    for (const { key, requester } of verdict.unresponsive) {
      await locks.leave({ key, requester });
      options.metrics?.unresponsiveWaiters.inc();
      log.warn(
        { event: 'lock.skip-unresponsive-waiter', key, requester, wokenForMs: unresponsiveHeadMs },
        'took a head that never tried after its wake-ups out of its queue; it queues again if back',
      );
    }
    for (const queue of verdict.wake) {
      log.info({ event: 'lock.sweep-wake', key: queue.key, head: queue.waiters[0] }, 'woke a stalled queue');
      await wakeFirstLiving(options, queue.key, queue.waiters);
    }
  } catch (error) {
    log.warn(
      { event: 'lock.sweep-failed', error: String(error) },
      'queue sweep failed; the next one goes on',
    );
  }
  try {
    // Keys used once and lapsed tickets go, so the next sweeps' reads follow what is live.
    options.metrics?.idleRecordsForgotten.inc(await locks.forgetIdleKeys());
  } catch (error) {
    log.warn(
      { event: 'lock.sweep-failed', part: 'idle keys', error: String(error) },
      'forgetting idle keys failed; the next sweep goes on',
    );
  }
  return seen;
}

/** Runs `work` (a worker's run) with the queue sweep beside it, and stops the sweep when it ends. */
export async function withQueueSweep(options: QueueSweepOptions, work: () => Promise<void>): Promise<void> {
  sweepIntervalMs(options.everyMs);
  const stop = new AbortController();
  const sweeping = sweepQueues(options, stop.signal);
  try {
    await work();
  } finally {
    stop.abort();
    await sweeping;
  }
}

/** A worker plugin that runs the queue sweep for as long as the worker runs. */
export function queueSweepPlugin(options: QueueSweepOptions): WorkerPlugin {
  sweepIntervalMs(options.everyMs);
  return {
    name: 'lockwarden-queue-sweep',
    runWorker: (worker, next) => withQueueSweep(options, () => next(worker)),
  };
}
