// Names and numbers every side shares: the version, workflow ids, task queues, limits.
import { SESSION_PHASES } from './sessionModel/sessionPhases';

/** This release of lockwarden: the Build ID its workers register under Worker Versioning by default. */
export const LOCKWARDEN_VERSION = '0.2.0';

/** Task queue the worker polls when none is configured; clients start sessions on the same one. */
export const DEFAULT_TASK_QUEUE = 'lockwarden';

/** Task queue of the model worker (`lockwarden-model-worker`) when none is configured. */
export const DEFAULT_MODEL_TASK_QUEUE = 'lockwarden-model';

/**
 * How long a session's decision waits on the model worker's queue for a worker to take it: with no
 * model worker running, the session's own policy answers after this (cause `model-unavailable`).
 */
export const MODEL_QUEUE_WAIT_MS = 5_000;

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
 * How many sessions a lockwarden worker keeps in its workflow cache. A session evicted from it
 * replays its history on its next workflow task, on the worker and on the server (which sends the
 * whole history), so the cache is sized for the sessions that act at once: when 1,000 holders
 * release together, the holders and their 1,000 heads all act. On that drain (bench/scale.ts,
 * bench/results/scale-sqlite-cache-sizes.md) a cache of 300 ran at 0.52x the independent-key rate,
 * 1,200 and 1,800 at 0.69x, 2,000 with the sticky timeout below at 0.81x, 2,500 at 0.92x. Parked
 * waiters fill the cache too while they wait, at about 0.35 MiB of worker RSS each: with 10,000
 * parked on 1,000 keys the worker took 945 MiB at 2,000 and 1,446 MiB at 2,500, so the default
 * stops at 2,000. Size it to the hand-offs in flight on your keys (docs/performance.md).
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 2_000;

/**
 * How long a session's workflow task may wait on its worker's sticky queue before the server moves it
 * to the shared queue (the SDK's default is 10 s). When 1,000 holders release at once, the worker has
 * more than 10 s of workflow tasks queued; each that times out goes to the shared queue, where the
 * worker fetches and replays the whole history, which lengthens the queue further (in bench/scale.ts
 * the holders' release tasks timed out this way and the drain ran at 0.69x). The price is how long a
 * task of a worker that crashed waits before another worker takes it: at most this long.
 */
export const DEFAULT_STICKY_SCHEDULE_TO_START_MS = 30_000;

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
 * (policy/decisions/leaseKeeping.ts).
 */
export const MAX_QUEUE_SWEEP_MS = 5_000;

/**
 * The history a holding session lets grow before it continues as new: a hold adds no event per
 * renewal (its keeper renews outside the history), so only messages grow it (release requests,
 * waits, keep-alive-less holders' notices), refused ones too. Well under Temporal's own suggestion
 * (4 Ki events at the least), so a stream of messages never makes its history slow to replay.
 */
export const HOLD_HISTORY_EVENTS = 2_000;

/**
 * How long a lock service keeps a key that has no lease and no ticket before the sweep forgets it
 * (LockService.forgetIdleKeys): long enough that `lockctl status` still shows a key's newest token a
 * minute after its release, short enough that keys used once cost nothing for long. The sweeps read
 * the keys freed within this window besides the live ones.
 */
export const IDLE_KEY_RETENTION_MS = 60_000;

/**
 * Most live tickets one key's queue takes (a lock service's maxWaitersPerKey, unless configured
 * otherwise): a requester asking for a place beyond them is denied QUEUE_FULL and takes none. Far
 * above any real queue (the scale bench parks thousands), it stops a runaway caller from growing
 * one key's queue, and every read of it, without end.
 */
export const DEFAULT_MAX_WAITERS_PER_KEY = 50_000;

/**
 * Most keys one requester name may hold or wait for at once (a lock service's maxKeysPerRequester,
 * unless configured otherwise): a grant or a first ticket beyond them is denied REQUESTER_LIMIT. A
 * session's requester is its own name on one key, so this bounds the sessions a caller runs under
 * one name, which a runaway loop would otherwise grow without end.
 */
export const DEFAULT_MAX_KEYS_PER_REQUESTER = 10_000;

/** Most records one forgetIdleKeys call drops: a sweep stays short however much is waiting to go. */
export const FORGET_IDLE_BATCH = 2_000;

/** The lock service's observed latency floor: no retry is ever scheduled sooner than this. */
export const LATENCY_FLOOR_MS = 50;

/** Where a session stands, as shown in its LockState search attribute (a fenced release adds one). */
export const LOCK_STATES = [...SESSION_PHASES, 'release-refused'] as const;
export type LockState = (typeof LOCK_STATES)[number];

export { acquisitionWorkflowId, releaseWorkflowId } from './lockContract/identifiers';

/**
 * How long one attempt of a local activity (a lock call on a hand-off's path, the policy's decision)
 * may run before it is abandoned and tried again: the start-to-close a regular lock call has. It is
 * kept by lockwarden's activity interceptor (worker/localAttemptBound.ts), not by the SDK core, whose
 * per-attempt timer leaks on every retried attempt; the local activities carry a schedule-to-close
 * timeout only (LOCAL_CALL_SCHEDULE_TO_CLOSE_MS).
 */
export const LOCAL_ATTEMPT_TIMEOUT_MS = 10_000;

/**
 * How long a local activity may take over all its attempts: a minute, which holds what its retry
 * policy allows (five lock-call attempts of LOCAL_ATTEMPT_TIMEOUT_MS and 3 s of back-offs between them).
 */
export const LOCAL_CALL_SCHEDULE_TO_CLOSE_MS = 60_000;
