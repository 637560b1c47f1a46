import { createDecisionActivities, type Decider } from './decisionActivities';
import { createLockActivities, type LockActivityDeps } from './lockActivities';

/** Everything the activities depend on; the worker builds it once, tests build it with real servers. */
export interface ActivityDeps extends LockActivityDeps {
  /** The model path; null (the default) means the deterministic policy decides. */
  decider?: Decider | null;
}

/** Builds every activity the worker registers, from its dependencies (no globals). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createLockActivities(deps),
    ...createDecisionActivities({ decider: deps.decider ?? null, log: deps.log }),
  };
}

/** The registered activities' type, for `proxyActivities<Activities>` in workflows. */
export type Activities = ReturnType<typeof createActivities>;
