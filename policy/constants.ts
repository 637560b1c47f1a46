import { SESSION_PHASES } from './session';

/** This release of lockwarden: the Build ID its workers register under Worker Versioning by default. */
export const LOCKWARDEN_VERSION = '0.2.0';

/** Task queue the worker polls when none is configured; clients start sessions on the same one. */
export const DEFAULT_TASK_QUEUE = 'lockwarden';

/** Namespace used when none is configured (the dev server's default). */
export const DEFAULT_NAMESPACE = 'default';

/** Temporal's frontend when none is configured: the local dev server. */
export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

/** The Temporal Web UI when none is configured: the local dev server's. */
export const DEFAULT_UI_URL = 'http://localhost:8233';

/**
 * How long one workflow activation may run before the worker's sandbox stops it (the SDK's default is
 * 5 s). The watchdog counts wall time, so a worker frozen mid-activation (a SIGSTOP, a VM paused for
 * migration, a long stop-the-world collection) trips it on resume, and a tripped timeout can corrupt
 * Node's async-hook stack and take the worker down (nodejs/node#38503). lockwarden's activations take
 * milliseconds; the server's own 10 s workflow-task timeout already reassigns a task a stalled worker
 * holds, so a long bound here costs only this: a runaway loop in workflow code is caught after a
 * minute instead of after 5 s.
 */
export const DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS = 60_000;

/**
 * How many sessions a lockwarden worker keeps in its workflow cache. The SDK's default is sized from
 * the heap limit (about 2,300 on a 4 GiB heap); each cached session holds its own copy of the
 * workflow modules (about 70 KiB since they left zod to activities: bench/workflowLoadCost.ts) and its
 * state. 300 keeps the sessions that act often (holders releasing, waiters being handed the lock)
 * cached; a parked waiter evicted from the cache replays its short history when it is woken, which
 * costs about a millisecond. Size it to the sessions that act at once (README, Performance).
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 300;

/**
 * How many activities a lockwarden worker runs at once. A held lease's keeper is an activity for the
 * whole hold, mostly asleep (a timer and a few KiB), so the slots bound the holders a worker keeps, plus
 * the short lock, decision and on-call calls.
 */
export const DEFAULT_MAX_CONCURRENT_ACTIVITIES = 10_000;

/**
 * How often a worker asks its lock service for stalled queues (worker/queueSweep.ts), unless
 * configured otherwise: with two sweeps to confirm a stall, a lease that ends with no session to
 * report it is handed on within 5 to 10 s of its end, for one lock-service call per worker per sweep.
 */
export const DEFAULT_QUEUE_SWEEP_MS = 5_000;

/**
 * The slowest sweep a worker may run: the sweep also renews leases whose keepers fell silent, and a
 * session counts on a sweep at least this often when it gives its keeper a long heartbeat timeout
 * (policy/leaseKeeping.ts).
 */
export const MAX_QUEUE_SWEEP_MS = 5_000;

/** The lock service's observed latency floor: no retry is ever scheduled sooner than this. */
export const LATENCY_FLOOR_MS = 50;

/** Where a session stands, as shown in its LockState search attribute (a fenced release adds one). */
export const LOCK_STATES = [...SESSION_PHASES, 'release-refused'] as const;
export type LockState = (typeof LOCK_STATES)[number];

export { acquisitionWorkflowId, releaseWorkflowId } from './identifiers';
