// Temporal's floor for the contention bench: an in-memory FIFO mutex, as local activities.
import type { Client } from '@temporalio/client';
import { floorGo, type FloorMutex } from './floorWorkflows';

/** The workflow id of a floor waiter. */
export const floorWaiterId = (key: string, id: string) => `floor/${key}/${id}`;

/**
 * A FIFO mutex per key in the benchmark's memory: taken by the head of the queue (or anyone when no
 * one waits), given back with a signal to the new head. No lock service, no decision, no guard.
 */
export function createFloorMutex(client: Client): FloorMutex {
  const keys = new Map<string, { holder: string | null; waiters: string[] }>();
  const of = (key: string) => {
    let state = keys.get(key);
    if (!state) keys.set(key, (state = { holder: null, waiters: [] }));
    return state;
  };
  return {
    async floorTake({ key, id }: { key: string; id: string }): Promise<boolean> {
      const state = of(key);
      if (state.holder === null && (state.waiters.length === 0 || state.waiters[0] === id)) {
        state.holder = id;
        state.waiters = state.waiters.filter((w) => w !== id);
        return true;
      }
      if (!state.waiters.includes(id)) state.waiters.push(id);
      return false;
    },
    async floorGive({ key, id }: { key: string; id: string }): Promise<void> {
      const state = of(key);
      if (state.holder !== id)
        throw new Error(`floor mutex: ${id} gives back ${key}, held by ${state.holder}`);
      state.holder = null;
      const head = state.waiters[0];
      if (head) await client.workflow.getHandle(floorWaiterId(key, head)).signal(floorGo);
    },
  };
}
