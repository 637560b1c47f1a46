import { setTimeout as delay } from 'node:timers/promises';
import type { WorkerPlugin } from '@temporalio/worker';
import { type QueueWakeDeps, wakeFirstLiving } from '../activities/sessionSignals';
import { DEFAULT_QUEUE_SWEEP_MS } from '../policy/constants';
import { queuesToWake } from '../policy/queueSweep';

/** What a sweep needs: what waking a queue needs, and how often to look. */
export interface QueueSweepOptions extends QueueWakeDeps {
  everyMs?: number;
}

/**
 * The queue sweep: every `everyMs`, one call to the lock service for the keys that nobody holds
 * while their queues wait (`stalledQueues`), and a wake-up for the head of each one seen so at two
 * sweeps in a row (policy/queueSweep.ts). It is what tells a parked head that a lease ended when no
 * session is left to tell it: the holder's session was terminated or timed out, the holder lives
 * outside lockwarden, or the head woken by a release died before it tried. Parked waiters watch
 * nothing themselves, so this is the one periodic cost of waiting, and it does not grow with them.
 * Runs until `signal` aborts; a failed sweep is logged and the next one goes on.
 */
export async function sweepQueues(options: QueueSweepOptions, signal: AbortSignal): Promise<void> {
  const { locks, log } = options;
  const everyMs = options.everyMs ?? DEFAULT_QUEUE_SWEEP_MS;
  let previous = new Map<string, string>();
  while (!signal.aborted) {
    try {
      await delay(everyMs, undefined, { signal });
    } catch {
      return; // aborted: the worker is shutting down
    }
    try {
      const verdict = queuesToWake(previous, await locks.stalledQueues());
      previous = verdict.seen;
      for (const queue of verdict.wake) {
        log.info(
          { event: 'lock.sweep-wake', key: queue.key, head: queue.waiters[0] },
          'woke a stalled queue',
        );
        await wakeFirstLiving(options, queue.key, queue.waiters);
      }
    } catch (error) {
      log.warn(
        { event: 'lock.sweep-failed', error: String(error) },
        'queue sweep failed; the next one goes on',
      );
    }
  }
}

/** Runs `work` (a worker's run) with the queue sweep beside it, and stops the sweep when it ends. */
export async function withQueueSweep(options: QueueSweepOptions, work: () => Promise<void>): Promise<void> {
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
  return {
    name: 'lockwarden-queue-sweep',
    runWorker: (worker, next) => withQueueSweep(options, () => next(worker)),
  };
}
