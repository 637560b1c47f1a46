/**
 * The ids of the `patched()` branches in workflow code, in one place: tests read a history's patch
 * markers by these names, and a later `deprecatePatch()` must use the same string.
 */

/**
 * Renewals run as local activities, inside the workflow task the renewal timer wakes: one workflow
 * task and 6 history events a renewal instead of two tasks, an activity task and 11 events, which
 * roughly halves what holding costs the worker and the server (bench/scale.ts, a row of 0 waiters).
 * Runs that renewed through activity tasks (0.1.0's, and unversioned sessions a versioned worker
 * takes over) keep doing so.
 */
export const RENEWAL_IN_WORKFLOW_TASK = 'renewal-in-workflow-task';

/**
 * The session's request is checked (zod, defaults filled in) by the `checkAcquireRequest` local
 * activity in the first workflow task, not by workflow code: with zod out of the workflow bundle, a
 * session costs the worker about 1 ms and 0.15 MiB to load instead of 10 ms and 1.2 MiB
 * (bench/workflowLoadCost.ts), which is what starting, evicting and waking thousands of waiters pays.
 * Runs that parsed the request in the workflow keep doing so on replay.
 */
export const REQUEST_CHECKED_IN_ACTIVITY = 'request-checked-in-activity';

/**
 * Less work on the acquire's and the release's path. Each activation is a round trip between the
 * workflow and the worker's core of about 2 to 3 ms here, and an activity task is dispatched through
 * the server: a fresh session makes its first fast-path attempt in the local activity that checks its
 * request (`checkRequestAndTryAcquire`), one local activity in its first workflow task instead of two
 * in a row; a hold starts its keeper only half a renewal interval in (keeperStartInMs), so one given
 * back sooner never starts or cancels one; and a keeper's cancellation is answered when the keeper
 * has stopped (WAIT_CANCELLATION_COMPLETED), not at once, so the release's task runs no activation
 * for it (nothing waits for it: the session ends after the release). Runs from before keep their
 * path on replay.
 */
export const LEAN_WORKFLOW_TASKS = 'lean-workflow-tasks';

/**
 * A hold is kept by the `keepLease` activity, one for the whole hold, which renews (fenced, as before)
 * and heartbeats in the worker: no workflow task and no history event a renewal, so what holding
 * costs the worker and the server no longer grows with the renewals, and a long hold never has to
 * continue as new. Runs that renewed from the workflow keep doing so.
 */
export const LEASE_KEPT_BY_ACTIVITY = 'lease-kept-by-activity';

/**
 * A parked waiter, head of the queue or not, sleeps until what can end its wait tells it (a release,
 * a lost lease, its budget, an operator, a deadlock notice), with a ticket that lives as long as its
 * wait: no waiter wakes at the holder's lease end or to refresh its ticket, and the worker's queue
 * sweep finds a lease that ended with no session to tell (README, the waiting protocol). Runs that
 * watched the lease end and refreshed their tickets keep doing so.
 */
export const PARK_UNTIL_TOLD = 'park-until-told';

/**
 * The retry harness's hard rules: a request's constraints ("at most 3 retries", "escalate after 30s",
 * "do not escalate before 5s") are enforced as hard limits; a spent budget escalates whatever was
 * decided, abandon included; a model's delay is jittered client-side. Runs from before them keep the
 * guardrails they started with.
 */
export const HARNESS_RULES_OF_000 = 'harness-rules-of-000';

/**
 * withLock's one version boundary, decided at its start: the lease the job runs with is read from
 * the lock service (the session's notice is only a wake-up), the release carries the release key
 * withLock made, and the job runs in a cancellation scope that the session's end cancels (its
 * activities and timers stop instead of running on unprotected; withLock throws LeaseLost). Parents
 * from before it (0.1.0) took the lease from the notice and let the job run to its end.
 */
export const WITHLOCK_STOPS_ON_LOSS = 'withlock-stops-on-loss';
