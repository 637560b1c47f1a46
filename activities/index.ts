import { createLockActivities, type LockActivityDeps } from './lockActivities';

/** Everything the activities depend on; the worker builds it once, tests build it with real servers. */
export type ActivityDeps = LockActivityDeps;

/** Builds every activity the worker registers, from its dependencies (no globals). */
export function createActivities(deps: ActivityDeps) {
  return { ...createLockActivities(deps) };
}

/** The registered activities' type, for `proxyActivities<Activities>` in workflows. */
export type Activities = ReturnType<typeof createActivities>;
