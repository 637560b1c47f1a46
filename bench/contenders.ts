// The contenders the contention bench measures lockwarden against: the plain retry loops, a fixed
// poller.
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { acquire, release } from '../client/lockwardenClient';
import type { LockService } from '../locks/lockService';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { unique } from '../devkit/tempFiles';
import { floorWaiterId } from './floorMutex';
import { floorFinish, floorReady } from './floorWorkflows';

/** One contended run: N requesters on one key, each acquires, holds, releases. */
export interface ContentionRun {
  n: number;
  holdMs: number;
  makespanMs: number;
  /** N × hold / makespan: the share of the run in which the key did useful work. */
  utilization: number;
  lockCallsPerAcquisition: number;
  /** The session workflow ids (lockwarden only), for P5. */
  workflowIds: string[];
}

/** A lock service whose tryAcquire calls are counted. */
export function countingLocks(locks: LockService): {
  service: LockService;
  calls: () => number;
  reset(): void;
} {
  let calls = 0;
  const service = Object.create(locks) as LockService;
  service.tryAcquire = (request) => {
    calls++;
    return locks.tryAcquire(request);
  };
  return { service, calls: () => calls, reset: () => void (calls = 0) };
}

/** What one requester held: its lease and the lock service's time of its release. */
interface Hold {
  lease: Lease;
  releasedAt: number;
}

/** Runs `n` requesters to completion and measures the run; fails if two holds overlapped. */
async function contend(
  n: number,
  holdMs: number,
  calls: () => number,
  one: (requester: string) => Promise<Partial<Hold> & { workflowId?: string }>,
): Promise<ContentionRun> {
  const before = calls();
  const started = performance.now();
  const holds = await Promise.all(Array.from({ length: n }, () => one(unique('r'))));
  const makespanMs = performance.now() - started;
  const leased = holds.filter((h): h is Hold => h.lease !== undefined && h.releasedAt !== undefined);
  const ordered = [...leased].sort((a, b) => Number(BigInt(a.lease.token) - BigInt(b.lease.token)));
  for (let i = 1; i < ordered.length; i++) {
    if (ordered[i]!.lease.grantedAt < ordered[i - 1]!.releasedAt)
      throw new Error(
        `holds overlap: token ${ordered[i]!.lease.token} granted before ${ordered[i - 1]!.lease.token} was released`,
      );
  }
  return {
    n,
    holdMs,
    makespanMs,
    utilization: (n * holdMs) / makespanMs,
    lockCallsPerAcquisition: (calls() - before) / n,
    workflowIds: holds.flatMap((h) => (h.workflowId ? [h.workflowId] : [])),
  };
}

/** lockwarden: one session per requester through the client, holding for `holdMs` from the caller's side. */
export function lockwardenRun(
  client: Client,
  taskQueue: string,
  calls: () => number,
  n: number,
  holdMs: number,
) {
  const key = unique('bench');
  return contend(n, holdMs, calls, async (requester) => {
    const { lease, session } = await acquire(client, { key, requester }, { taskQueue });
    await delay(holdMs);
    const released = await release(client, lease);
    if (!released.ok) throw new Error(`release refused: ${released.reason}`);
    await session.result();
    return { lease, releasedAt: released.serviceTime, workflowId: session.workflowId };
  });
}

/**
 * Temporal's floor for the same run: floor waiters (bench/floorWorkflows.ts) on an in-memory FIFO
 * mutex, driven by the client exactly as lockwarden's sessions are. It makes no lock-service calls.
 */
export function floorRun(client: Client, taskQueue: string, n: number, holdMs: number) {
  const key = unique('floor');
  return contend(
    n,
    holdMs,
    () => 0,
    async (id) => {
      const handle = await client.workflow.start('floorWaiter', {
        taskQueue,
        workflowId: floorWaiterId(key, id),
        args: [{ key, id }],
      });
      await handle.executeUpdate(floorReady);
      await delay(holdMs);
      await handle.executeUpdate(floorFinish);
      await handle.result();
      return {};
    },
  );
}

/** A plain retry loop on the same lock service, with no fairness queue, sleeping `nextSleepMs(attempt)`. */
function loopRun(
  locks: LockService,
  calls: () => number,
  n: number,
  holdMs: number,
  nextSleepMs: (attempt: number) => number,
) {
  const key = unique('bench');
  return contend(n, holdMs, calls, async (requester) => {
    for (let attempt = 0; ; attempt++) {
      const answer = await locks.tryAcquire({
        key,
        requester,
        ttlMs: 30_000,
        fairness: 'no-starvation-guarantee',
      });
      if (answer.granted) {
        await delay(holdMs);
        const released = await locks.release(answer.lease);
        if (!released.ok) throw new Error(`release refused: ${released.reason}`);
        return { lease: answer.lease, releasedAt: released.serviceTime };
      }
      await delay(nextSleepMs(attempt));
    }
  });
}

/** Full jitter (AWS architecture blog): sleep uniformly in [0, min(cap, base × 2^attempt)]. */
export function fullJitterRun(locks: LockService, calls: () => number, n: number, holdMs: number) {
  return loopRun(locks, calls, n, holdMs, (attempt) => Math.random() * Math.min(2_000, 50 * 2 ** attempt));
}

/** Fixed polling: every 200 ms, ± 20 ms. */
export function fixedPollingRun(locks: LockService, calls: () => number, n: number, holdMs: number) {
  return loopRun(locks, calls, n, holdMs, () => 180 + Math.random() * 40);
}
