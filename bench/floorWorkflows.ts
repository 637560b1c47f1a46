// Temporal's own floor for the contention benchmark: workflows of a session's shape that do no lock
// work. Bundled with lockwarden's workflows by bench/benchWorkflows.ts, never by the worker.
import {
  allHandlersFinished,
  condition,
  defineSignal,
  defineUpdate,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export const floorReady = defineUpdate<void>('floorReady');
export const floorFinish = defineUpdate<void>('floorFinish');
export const floorGo = defineSignal('floorGo');

/**
 * The floor's in-memory FIFO mutex, as local activities of the benchmark worker (bench/floorMutex.ts):
 * taken by the head of the queue, given back with a floorGo signal to the new head.
 */
export interface FloorMutex {
  floorTake(input: { key: string; id: string }): Promise<boolean>;
  floorGive(input: { key: string; id: string }): Promise<void>;
}
export const floorWake = defineUpdate<void>('floorWake');

/**
 * A session's shape with nothing in it: one no-op activity answers the first update (as the fast
 * path answers awaitLease), a second answers the second (as the release answers releaseLease).
 */
export async function floorSession(): Promise<void> {
  let ready = false;
  let finishAsked = false;
  let finished = false;
  setHandler(floorReady, async () => {
    await condition(() => ready);
  });
  setHandler(floorFinish, async () => {
    finishAsked = true;
    await condition(() => finished);
  });
  await noop();
  ready = true;
  await condition(() => finishAsked);
  await noop();
  finished = true;
  await condition(allHandlersFinished);
}

/** The plain floor of an acquire and a release: a workflow that runs two no-op activities and ends. */
export async function floorTwoActivities(): Promise<void> {
  await noop();
  await noop();
}

/** The bare signal round trip: a signal, then one no-op activity, then completion. */
export async function floorSignalled(): Promise<void> {
  let go = false;
  setHandler(floorGo, () => {
    go = true;
  });
  await condition(() => go);
  await noop();
}

const mutex = proxyLocalActivities<FloorMutex>({ startToCloseTimeout: '10 seconds' });

/**
 * A session's contended shape with nothing of lockwarden in it: an in-memory mutex taken and given
 * back by local activities, a wake-up signal from the one that gives it back, and the two updates
 * (floorReady once held, floorFinish once given back). Temporal's own floor for P2's hand-offs.
 */
export async function floorWaiter(input: { key: string; id: string }): Promise<void> {
  let go = false;
  let held = false;
  let finishAsked = false;
  let given = false;
  setHandler(floorGo, () => {
    go = true;
  });
  setHandler(floorReady, async () => {
    await condition(() => held);
  });
  setHandler(floorFinish, async () => {
    finishAsked = true;
    await condition(() => given);
  });
  for (;;) {
    go = false;
    if (await mutex.floorTake(input)) break;
    await condition(() => go);
  }
  held = true;
  await condition(() => finishAsked);
  await mutex.floorGive(input);
  given = true;
  await condition(allHandlersFinished);
}

const { noop: localNoop } = proxyLocalActivities<{ noop(): Promise<void> }>({
  startToCloseTimeout: '10 seconds',
});

/**
 * A parked waiter's shape, for the wake-up's cheapest message (bench/wakeHop.ts): the caller's
 * floorReady waits; a floorGo signal or a floorWake update wakes it; it takes a local no-op (its fast
 * path) and answers the caller.
 */
export async function floorParked(): Promise<void> {
  let woken = false;
  let held = false;
  setHandler(floorGo, () => {
    woken = true;
  });
  setHandler(floorWake, () => {
    woken = true;
  });
  setHandler(floorReady, async () => {
    await condition(() => held);
  });
  await condition(() => woken);
  await localNoop();
  held = true;
  await condition(allHandlersFinished);
}
